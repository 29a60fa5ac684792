"""The Agent Card, built from the toolkit's SKILL.md skills (never raw tools).

One card for every client: the legacy ``url`` / ``protocolVersion`` /
``preferredTransport`` fields that toolnexus's outbound client and A2A v0.3
clients read, plus ``supportedInterfaces`` for v1.0 clients, listing the one
JSON-RPC endpoint once per protocol version it speaks (the official a2a-sdk
client picks the 1.0 entry, or the 0.3 one for its compat transport).
"""

from __future__ import annotations

import threading
from typing import Any

import toolnexus

from ..conf import toolnexus_settings
from ..runtime import skills_dirs

PROTOCOL_VERSION = "0.3.0"
#: (protocolBinding, protocolVersion) of each entry of supportedInterfaces.
INTERFACES = (("JSONRPC", "1.0"), ("JSONRPC", "0.3"))

_lock = threading.Lock()
_skills_cache: list[dict[str, Any]] | None = None


def card_skills() -> list[dict[str, Any]]:
    """The card's skills: every SKILL.md under TOOLKIT["skills_dir"], filtered
    by AGENT["skills"]. Read once per process (and again when settings change)."""
    global _skills_cache
    cached = _skills_cache
    if cached is None:
        with _lock:
            if _skills_cache is None:
                dirs = skills_dirs()
                found = toolnexus.list_skills(dirs).skills if dirs else []
                wanted = toolnexus_settings.AGENT.get("skills")
                selected = [s for s in found if wanted is None or s.name in wanted]
                _skills_cache = [
                    {
                        "id": s.name,
                        "name": s.name,
                        "description": s.description or "",
                        # v1.0 requires at least one tag.
                        "tags": [s.name],
                    }
                    for s in sorted(selected, key=lambda s: s.name)
                ]
            cached = _skills_cache
    return cached


def _forget_skills() -> None:
    global _skills_cache
    with _lock:
        _skills_cache = None


toolnexus_settings.on_reload(_forget_skills)


def build_card(endpoint_url: str) -> dict[str, Any]:
    """The Agent Card; ``endpoint_url`` is the absolute JSON-RPC endpoint."""
    agent = toolnexus_settings.AGENT
    card: dict[str, Any] = {
        "name": agent.get("name") or "toolnexus-agent",
        "description": agent.get("description") or "",
        "version": agent.get("version") or "0.1.0",
        "protocolVersion": PROTOCOL_VERSION,
        "url": endpoint_url,
        "preferredTransport": "JSONRPC",
        "supportedInterfaces": [
            {"url": endpoint_url, "protocolBinding": binding, "protocolVersion": version}
            for binding, version in INTERFACES
        ],
        "capabilities": {"streaming": True, "pushNotifications": False},
        "defaultInputModes": ["text"],
        "defaultOutputModes": ["text"],
        "skills": card_skills(),
    }
    if agent.get("provider"):
        card["provider"] = agent["provider"]
    return card
