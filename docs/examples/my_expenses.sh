#!/bin/sh
# Alice asks for her own claims (A2A v0.3's message/send, which blocks until the answer).
BASE="${BASE:-http://127.0.0.1:8000}"
message_id=$(python3 -c 'import uuid; print(uuid.uuid4())')

curl -s -u alice:alice-pw "$BASE/agent/" -H 'Content-Type: application/json' -d '{
  "jsonrpc": "2.0", "id": 1, "method": "message/send",
  "params": {"message": {"kind": "message", "role": "user", "messageId": "'"$message_id"'",
    "parts": [{"kind": "text", "text": "show my expenses"}]}}}'
echo
