"""The official a2a-sdk client (``pip install a2a-sdk==1.3.0``), streaming, against the demo.

With ``ClientConfig(streaming=True)``, ``send_message`` yields the events of the stream as the
agent sends them: the Task, status updates (each tool call is a ``working`` one whose message
names the tool), and the answer as the model writes it — artifact updates on one artifact id,
``append`` false to start (or start over) its text, true to add to it. The last one,
``last_chunk`` true, carries the whole answer: a client that missed a chunk still ends right.
It asks as bob (signed in: his own expense claims), and prints the text as it arrives.
"""

import asyncio
import os
import uuid
from collections.abc import Iterable

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageRequest, TaskState

BASE = os.environ.get("BASE", "http://127.0.0.1:8000")


def text_of(parts: Iterable[Part]) -> str:
    return "".join(part.text for part in parts if part.WhichOneof("content") == "text")


async def main() -> None:
    async with httpx.AsyncClient(timeout=60, auth=("bob", "bob-pw")) as http:
        card = await A2ACardResolver(http, f"{BASE}/agent").get_agent_card()
        client = ClientFactory(ClientConfig(streaming=True, httpx_client=http)).create(card)

        message = Message(
            message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text="show my expenses")]
        )
        texts: dict[str, str] = {}  # each artifact's text so far, by its id
        shown, pieces = "", 0  # what is on the screen; how many chunks made it
        async for event in client.send_message(SendMessageRequest(message=message)):
            if event.HasField("artifact_update"):
                update = event.artifact_update
                artifact_id, chunk = update.artifact.artifact_id, text_of(update.artifact.parts)
                text = texts.get(artifact_id, "") + chunk if update.append else chunk
                texts[artifact_id] = text
                if text.startswith(shown):
                    print(text[len(shown) :], end="", flush=True)  # the new words only
                else:
                    print("\n" + text, end="", flush=True)  # started over: a new line
                shown = text
                if not update.last_chunk:
                    pieces += 1
            elif event.HasField("status_update"):
                status = event.status_update.status
                if status.state == TaskState.TASK_STATE_WORKING and status.message.parts:
                    print(f"[{status.message.parts[0].text}]", flush=True)  # a tool call
                elif status.state != TaskState.TASK_STATE_WORKING:
                    print(f"\n{TaskState.Name(status.state)} ({pieces} chunks)")
        await client.close()


asyncio.run(main())
