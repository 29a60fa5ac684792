#!/bin/sh
# A2A v0.3 (slash method names): message/send blocks until the Task is finished or waits on
# a person; "configuration": {"blocking": false} returns the submitted Task at once.
BASE="${BASE:-http://127.0.0.1:8000}"
# A fresh messageId per send: a repeated one returns the Task it started (retries are safe).
new_id() { python3 -c 'import uuid; print(uuid.uuid4())'; }

# 1. A request that needs no approval: the blocking send returns the completed Task.
curl -s "$BASE/agent/" -H 'Content-Type: application/json' -d '{
  "jsonrpc": "2.0", "id": "a", "method": "message/send",
  "params": {"message": {"kind": "message", "role": "user", "messageId": "'"$(new_id)"'",
    "parts": [{"kind": "text", "text": "Summarise: the release moved to Friday because the tests were red."}]}}}'
echo

# 2. An expense claim, as alice: the tool asks a reviewer first, so the blocking send
#    comes back input-required.
waiting=$(curl -s -u alice:alice-pw "$BASE/agent/" -H 'Content-Type: application/json' -d '{
  "jsonrpc": "2.0", "id": "b", "method": "message/send",
  "params": {"message": {"kind": "message", "role": "user", "messageId": "'"$(new_id)"'",
    "parts": [{"kind": "text", "text": "File an expense of 42.50 for a train ticket to Lyon"}]}}}')
echo "$waiting"
task_id=$(echo "$waiting" | python3 -c 'import json, sys; print(json.load(sys.stdin)["result"]["id"])')

# 3. The requester cannot answer the approval with a message carrying the taskId: only a
#    reviewer may, in the admin. The answer is error -32004 (ANSWER_NOT_ALLOWED); the Task
#    keeps waiting.
curl -s -u alice:alice-pw "$BASE/agent/" -H 'Content-Type: application/json' -d '{
  "jsonrpc": "2.0", "id": "c", "method": "message/send",
  "params": {"message": {"kind": "message", "role": "user", "messageId": "'"$(new_id)"'",
    "taskId": "'"$task_id"'", "parts": [{"kind": "data", "data": {"cost_center": "travel"}}]}}}'
echo

# 4. tasks/get reads it: still input-required until a reviewer decides in the admin.
curl -s -u alice:alice-pw "$BASE/agent/" -H 'Content-Type: application/json' \
  -d '{"jsonrpc": "2.0", "id": "d", "method": "tasks/get", "params": {"id": "'"$task_id"'"}}'
echo
