#!/bin/sh
# The HTTP+JSON binding (A2A v1.0 REST) under the same mount: the same Tasks as JSON-RPC.
BASE="${BASE:-http://127.0.0.1:8000}"
# A fresh messageId per send: a repeated one returns the Task it started (retries are safe).
new_id() { python3 -c 'import uuid; print(uuid.uuid4())'; }

# SendMessage: POST /agent/message:send blocks (as v1.0 does) and returns {"task": ...}.
sent=$(curl -s -X POST "$BASE/agent/message:send" -H 'Content-Type: application/json' \
  -d '{"message": {"messageId": "'"$(new_id)"'", "role": "ROLE_USER",
       "parts": [{"text": "Summarise: the office is closed on Monday."}]}}')
echo "$sent"
task_id=$(echo "$sent" | python3 -c 'import json, sys; print(json.load(sys.stdin)["task"]["id"])')

# GetTask: GET /agent/tasks/{id}.
curl -s "$BASE/agent/tasks/$task_id"
echo

# An unknown Task is HTTP 404 with a google.rpc.Status body.
curl -s -w '\nHTTP %{http_code}\n' "$BASE/agent/tasks/no-such-task"
