"""The number (and on/off) settings: one rule, and one id, per setting."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from django.core.checks import CheckMessage

from ..conf import setting_name
from .problems import problem
from .sections import seconds, whole


@dataclass(frozen=True)
class Limit:
    code: str
    key: str
    #: "whole" (an int >= minimum), "seconds" (> 0), "seconds0" (>= 0) or "flag" (a bool).
    kind: Literal["whole", "seconds", "seconds0", "flag"]
    minimum: int = 1
    nullable: bool = False
    hint: str | None = None

    def holds(self, value: Any) -> bool:
        if value is None and self.nullable:
            return True
        if self.kind == "whole":
            return whole(value, self.minimum)
        if self.kind == "flag":
            return isinstance(value, bool)
        return seconds(value, zero=self.kind == "seconds0")

    def wanted(self) -> str:
        if self.kind == "whole":
            what = f"a whole number >= {self.minimum}"
        elif self.kind == "flag":
            what = "True or False"
        else:
            what = "a number of seconds " + (">= 0" if self.kind == "seconds0" else "> 0")
        return what + (", or None" if self.nullable else "")


LIMITS: tuple[Limit, ...] = (
    Limit("E401", "MAX_RUNS", "whole"),
    Limit("E402", "DATABASE_THREADS", "whole"),
    Limit("E403", "TOOL_THREADS", "whole"),
    Limit("E404", "MAX_ATTEMPTS", "whole"),
    Limit("E405", "MAX_HELD_REQUESTS", "whole", nullable=True),
    Limit("E406", "MAX_OUTPUT_CHARS", "whole"),
    Limit("E407", "MAX_HISTORY_MESSAGES", "whole"),
    Limit("E408", "MAX_MEMORY_MESSAGES", "whole"),
    Limit("E409", "MAX_MODEL_RESPONSE_BYTES", "whole"),
    Limit("E411", "STREAM_CHUNK_CHARS", "whole"),
    # Below 1024 bytes, ordinary browsers' requests (cookies, user agents) are refused.
    Limit(
        "E410",
        "MAX_HEADER_BYTES",
        "whole",
        minimum=1024,
        hint="The default, 65536 (64 KiB), leaves room for large cookies and tokens.",
    ),
    Limit("E420", "RUN_TIMEOUT", "seconds", nullable=True),
    Limit("E421", "LEASE_SECONDS", "seconds"),
    Limit("E422", "REQUEUE_AFTER", "seconds"),
    Limit("E423", "BLOCKING_TIMEOUT", "seconds"),
    Limit("E424", "STREAM_MAX_SECONDS", "seconds"),
    Limit("E425", "STREAM_HEARTBEAT", "seconds"),
    Limit("E426", "EVENT_POLL_INTERVAL", "seconds"),
    Limit("E428", "EVENT_FALLBACK_POLL_INTERVAL", "seconds"),
    Limit("E427", "READ_TIMEOUT", "seconds"),
    Limit("E430", "IDEMPOTENCY_WINDOW", "seconds0", nullable=True),
    Limit("E431", "EXPIRY_SWEEP_INTERVAL", "seconds0"),
    Limit("E432", "GRACE_SECONDS", "seconds0"),
    Limit("E433", "CREDENTIAL_CACHE_SECONDS", "seconds0"),
    Limit("E434", "STREAM_CHUNK_SECONDS", "seconds0"),
    Limit("E435", "STREAM_LIVE_UPDATES", "flag"),
)


def check_limits(cfg: dict[str, Any]) -> list[CheckMessage]:
    return [
        problem(
            limit.code,
            f"{setting_name(limit.key)} must be {limit.wanted()}, not {cfg[limit.key]!r}",
            hint=limit.hint,
        )
        for limit in LIMITS
        if not limit.holds(cfg[limit.key])
    ]
