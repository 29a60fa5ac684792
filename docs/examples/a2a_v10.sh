#!/bin/sh
# A2A v1.0 (header A2A-Version: 1.0): SendMessage blocks unless
# configuration.returnImmediately, and its result is {"task": ...}; ListTasks pages
# through the caller's Tasks, newest first.
BASE="${BASE:-http://127.0.0.1:8000}"

curl -s "$BASE/agent/" -H 'Content-Type: application/json' -H 'A2A-Version: 1.0' -d '{
  "jsonrpc": "2.0", "id": 10, "method": "SendMessage",
  "params": {"message": {"messageId": "m-10", "role": "ROLE_USER",
    "parts": [{"text": "Summarise: the meeting moved to Friday at ten."}]}}}'
echo

curl -s "$BASE/agent/" -H 'Content-Type: application/json' -H 'A2A-Version: 1.0' \
  -d '{"jsonrpc": "2.0", "id": 11, "method": "ListTasks", "params": {"pageSize": 2, "historyLength": 0}}'
echo
