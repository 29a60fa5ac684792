"""The official a2a-sdk client (``pip install a2a-sdk==1.3.0``) against the demo.

It reads the Agent Card, sends an expense claim as alice over the card's JSON-RPC v1.0
interface, sees the Task wait for a reviewer (input-required), then reads the Task until a
reviewer has decided in the admin and prints the answer. The requester does not answer the
approval: a message carrying the Task's id would be refused (only a reviewer may answer).
STREAMING=1 sends it with the streaming method instead; it prints the same.
"""

import asyncio
import os
import uuid

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import GetTaskRequest, Message, Part, Role, SendMessageRequest, TaskState

BASE = os.environ.get("BASE", "http://127.0.0.1:8000")
FINISHED = {
    TaskState.TASK_STATE_COMPLETED,
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_CANCELED,
    TaskState.TASK_STATE_REJECTED,
}


async def main() -> None:
    # HTTP Basic as alice: the demo files claims as the person who asks.
    async with httpx.AsyncClient(timeout=60, auth=("alice", "alice-pw")) as http:
        card = await A2ACardResolver(http, f"{BASE}/agent").get_agent_card()
        streaming = os.environ.get("STREAMING") == "1"
        client = ClientFactory(ClientConfig(streaming=streaming, httpx_client=http)).create(card)

        text = "File an expense of 12.50 for a taxi"
        message = Message(
            message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=text)]
        )
        # Not streaming: one event, the Task once it waits on a person (a blocking send, the
        # v1.0 default). Streaming: the Task, then each update as it happens (tool calls
        # included); the stream ends on the one that leaves it waiting on a person.
        async for event in client.send_message(SendMessageRequest(message=message)):
            if event.HasField("task"):
                task_id, status = event.task.id, event.task.status
            elif event.HasField("status_update"):
                task_id, status = event.status_update.task_id, event.status_update.status
        state, asked = TaskState.Name(status.state), status.message.parts[0].text
        print(f"{task_id} {state} - {asked}", flush=True)

        # Now a reviewer approves it in the admin; read the Task until that has happened.
        task = await client.get_task(GetTaskRequest(id=task_id))
        while task.status.state not in FINISHED:
            await asyncio.sleep(1)
            task = await client.get_task(GetTaskRequest(id=task_id))
        state, answer = TaskState.Name(task.status.state), task.artifacts[0].parts[0].text
        print(f"{task.id} {state} - {answer}")
        await client.close()


asyncio.run(main())
