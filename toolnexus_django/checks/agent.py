"""``AGENT``, ``TOOLKIT`` and ``CLIENT``: the card, the toolkit and the model
client a run is built from."""

from __future__ import annotations

import inspect
import os
from typing import Any

import toolnexus
from django.core.checks import CheckMessage

from ..agent.runtime import CLIENT_STYLES
from ..conf import AGENT_KEYS, TOOLKIT_KEYS, setting_name
from .problems import problem
from .sections import importable

#: Where toolnexus's client looks for a key when CLIENT's api_key is empty.
API_KEY_ENV = ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY")
#: The id of an unknown key inside each section.
UNKNOWN_KEY = {"AGENT": "E302", "TOOLKIT": "E312", "CLIENT": "E322"}


def known_keys(section: str) -> tuple[str, ...]:
    """The keys a dict ``AGENT``, ``TOOLKIT`` or ``CLIENT`` may hold: the
    card's fields; this app's toolkit keys plus what the installed toolnexus's
    ``create_toolkit`` / ``create_client`` take (a key it does not take would
    fail the first run)."""
    if section == "AGENT":
        return AGENT_KEYS
    if section == "TOOLKIT":
        params = inspect.signature(toolnexus.create_toolkit).parameters
        passed = tuple(p for p in params if p not in ("extra_tools", *TOOLKIT_KEYS))
        return TOOLKIT_KEYS + passed
    if section == "CLIENT":
        return tuple(inspect.signature(toolnexus.create_client).parameters)
    raise ValueError(section)


def check_agent(raw: dict[str, Any], cfg: dict[str, Any]) -> list[CheckMessage]:
    """The three sections; ``raw`` as written (for typos), ``cfg`` merged."""
    errors = check_unknown_keys(raw)
    errors += _agent(cfg["AGENT"])
    errors += _toolkit(cfg["TOOLKIT"])
    errors += _client(cfg["CLIENT"])
    return errors


def check_unknown_keys(raw: dict[str, Any]) -> list[CheckMessage]:
    """A typo inside AGENT / TOOLKIT / CLIENT ("skils") is an unknown key."""
    errors: list[CheckMessage] = []
    for section, code in UNKNOWN_KEY.items():
        value = raw.get(section)
        if not isinstance(value, dict):
            continue
        known = known_keys(section)
        for key in value:
            if key not in known:
                errors.append(
                    problem(
                        code,
                        f"{setting_name(section)} has an unknown key {key!r}",
                        hint=f"Known keys: {', '.join(known)}.",
                    )
                )
    return errors


def _agent(agent: Any) -> list[CheckMessage]:
    if not isinstance(agent, dict):
        return [problem("E301", f"{setting_name('AGENT')} must be a dict")]
    if agent.get("skills") is not None and not isinstance(agent["skills"], (list, tuple)):
        return [problem("E303", f"{setting_name('AGENT', 'skills')} must be a list of names")]
    return []


def _toolkit(toolkit: Any) -> list[CheckMessage]:
    if isinstance(toolkit, str):
        return importable("E313", toolkit, "TOOLKIT")
    if not isinstance(toolkit, dict):
        return [problem("E311", f"{setting_name('TOOLKIT')} must be a dict or a dotted path")]
    errors = check_skills_dir(toolkit.get("skills_dir"))
    tools = toolkit.get("tools")
    if tools is not None and not isinstance(tools, (list, tuple)):
        where = setting_name("TOOLKIT", "tools")
        return [*errors, problem("E315", f"{where} must be a list of dotted paths")]
    for i, path in enumerate(tools or ()):
        errors += importable("E316", path, "TOOLKIT", "tools", i)
    return errors


def check_skills_dir(value: Any) -> list[CheckMessage]:
    where = setting_name("TOOLKIT", "skills_dir")
    if value is None:
        return []
    if isinstance(value, (str, os.PathLike)):
        dirs = [value]
    elif isinstance(value, (list, tuple)) and all(isinstance(d, (str, os.PathLike)) for d in value):
        dirs = list(value)
    else:
        return [problem("E314", f"{where} must be a path or a list of paths")]
    errors: list[CheckMessage] = []
    for d in dirs:
        path = os.fspath(d)
        if not os.path.isdir(path) or not os.access(path, os.R_OK | os.X_OK):
            errors.append(problem("E004", f"{where}: {path!r} is not a readable directory"))
    return errors


def _client(client: Any) -> list[CheckMessage]:
    if isinstance(client, str):
        return importable("E323", client, "CLIENT")
    if not isinstance(client, dict):
        return [problem("E321", f"{setting_name('CLIENT')} must be a dict or a dotted path")]
    errors: list[CheckMessage] = []
    style = client.get("style") or "openai"
    if style not in CLIENT_STYLES:
        errors.append(
            problem(
                "E005",
                f"{setting_name('CLIENT', 'style')} = {style!r} is not a known client style",
                hint=f"Use one of {', '.join(CLIENT_STYLES)}.",
            )
        )
    if not client.get("base_url") or not client.get("model"):
        errors.append(
            problem(
                "W001",
                f"{setting_name('CLIENT')} has no base_url or model: every run will fail",
                hint="Set CLIENT base_url and model, or a dotted path to a client factory.",
            )
        )
    elif not client.get("api_key") and not any(os.environ.get(k) for k in API_KEY_ENV):
        # A warning, not an error: migrate, createsuperuser and the rest
        # must run before the key is there (the pasted Install reads it
        # from the environment, default "").
        errors.append(
            problem(
                "W004",
                f"{setting_name('CLIENT')} has no api_key and none of"
                f" {' / '.join(API_KEY_ENV)} is set: every run will fail",
                hint="Set OPENAI_API_KEY (any value for a local server that needs none).",
            )
        )
    return errors
