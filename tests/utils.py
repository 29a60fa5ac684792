"""Small helpers and constants shared by the tests."""

from __future__ import annotations

from typing import Any

#: TOOL_ANSWERERS that lets the requester answer the demo's expense approval
#: (by default a reviewer must): for tests of continuing a Task over A2A
#: that use the expense scenario.
REQUESTER_APPROVES: dict[str, Any] = {"file_expense": ["requester", "reviewer"]}
