#!/bin/sh
# The toolnexus dialect (no A2A-Version header): SendMessage answers at once with the
# submitted Task; GetTask reads it until the run is over.
BASE="${BASE:-http://127.0.0.1:8000}"

sent=$(curl -s "$BASE/agent/" -H 'Content-Type: application/json' -d '{
  "jsonrpc": "2.0", "id": 1, "method": "SendMessage",
  "params": {"message": {"role": "user", "parts": [{"kind": "text",
    "text": "Summarise: Django is a high-level Python web framework that encourages rapid development."}]}}}')
echo "$sent"
task_id=$(echo "$sent" | python3 -c 'import json, sys; print(json.load(sys.stdin)["result"]["id"])')

# Poll GetTask (at most 20 times) until the Task is no longer submitted or working.
for attempt in $(seq 20); do
  task=$(curl -s "$BASE/agent/" -H 'Content-Type: application/json' \
    -d '{"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": "'"$task_id"'"}}')
  case "$task" in
    *'"state":"submitted"'* | *'"state":"working"'*) sleep 0.5 ;;
    *) break ;;
  esac
done
echo "$task"
