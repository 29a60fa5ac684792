#!/bin/sh
# Alice asks the agent to file an expense claim (the toolnexus dialect, signed in with HTTP
# Basic), then reads the Task until it stops: it waits for a reviewer (input-required).
BASE="${BASE:-http://127.0.0.1:8000}"

sent=$(curl -s -u alice:alice-pw "$BASE/agent/" -H 'Content-Type: application/json' -d '{
  "jsonrpc": "2.0", "id": 1, "method": "SendMessage",
  "params": {"message": {"role": "user", "parts": [{"kind": "text",
    "text": "File an expense of 42 for a taxi"}]}}}')
task_id=$(echo "$sent" | python3 -c 'import json, sys; print(json.load(sys.stdin)["result"]["id"])')

# Poll GetTask (at most 20 times) until the run has stopped.
for attempt in $(seq 20); do
  task=$(curl -s -u alice:alice-pw "$BASE/agent/" -H 'Content-Type: application/json' \
    -d '{"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": "'"$task_id"'"}}')
  case "$task" in
    *'"state":"submitted"'* | *'"state":"working"'*) sleep 0.5 ;;
    *) break ;;
  esac
done
echo "$task"
