#!/bin/sh
# A stream (A2A v1.0 SendStreamingMessage, as bob): the Task, then each move, and between the
# moves the run's tool calls and its answer as it is written. curl -N prints each event as it
# arrives; the stream ends after the move that leaves the Task completed.
BASE="${BASE:-http://127.0.0.1:8000}"
# A fresh messageId per send: a repeated one returns the Task it started (retries are safe).
new_id() { python3 -c 'import uuid; print(uuid.uuid4())'; }

curl -sN -u bob:bob-pw "$BASE/agent/" -H 'Content-Type: application/json' -H 'A2A-Version: 1.0' -d '{
  "jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
  "params": {"message": {"messageId": "'"$(new_id)"'", "role": "ROLE_USER",
    "parts": [{"text": "show my expenses"}]}}}'
