#!/bin/sh
# A2A v1.0 (header A2A-Version: 1.0): SendMessage blocks unless
# configuration.returnImmediately, and its result is {"task": ...}; ListTasks pages
# through the caller's Tasks, newest first.
BASE="${BASE:-http://127.0.0.1:8000}"
# A fresh messageId per send: a repeated one returns the Task it started (retries are safe).
new_id() { python3 -c 'import uuid; print(uuid.uuid4())'; }

curl -s "$BASE/agent/" -H 'Content-Type: application/json' -H 'A2A-Version: 1.0' -d '{
  "jsonrpc": "2.0", "id": 10, "method": "SendMessage",
  "params": {"message": {"messageId": "'"$(new_id)"'", "role": "ROLE_USER",
    "parts": [{"text": "Summarise: the meeting moved to Friday at ten."}]}}}'
echo

curl -s "$BASE/agent/" -H 'Content-Type: application/json' -H 'A2A-Version: 1.0' \
  -d '{"jsonrpc": "2.0", "id": 11, "method": "ListTasks", "params": {"pageSize": 2, "historyLength": 0}}'
echo
