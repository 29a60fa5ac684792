"""System checks of ``TOOLNEXUS["MCP"]`` (the toolkit as an MCP server).

- ``toolnexus_django.E001``: a key MCP does not take.
- ``toolnexus_django.E020``: a value of the wrong kind (``tools``, the DRF
  classes, the limits); ``E007``: a DRF class's dotted path does not import.
- ``toolnexus_django.E021``: a tool name in ``tools`` the toolkit does not have
  (the toolkit is built once, to look: only when ``tools`` is a list).
- ``toolnexus_django.W020``: the toolkit could not be built to check the names.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterable
from typing import Any

from django.core.checks import CheckMessage, Error, Tags, Warning, register

from .conf import DEFAULTS, SETTING_NAME
from .mcp.config import ALL
from .section_checks import dict_section

KNOWN = tuple(DEFAULTS["MCP"])
WHERE = f"{SETTING_NAME}['MCP']"
#: How long building the toolkit to check the tool names may take.
BUILD_TIMEOUT = 60.0


@register(Tags.compatibility)
def check_mcp(app_configs: Iterable[Any] | None = None, **kwargs: Any) -> list[CheckMessage]:
    mcp, errors = dict_section("MCP", "toolnexus_django.E020")
    if mcp is None:
        return errors
    errors += _check_values(mcp)
    tools = mcp["tools"]
    if isinstance(tools, (list, tuple)) and all(isinstance(t, str) for t in tools):
        errors += _check_names(list(tools))
    return errors


def _bad(key: str, what: str) -> Error:
    return Error(f"{WHERE}[{key!r}] must be {what}", id="toolnexus_django.E020")


def _check_values(mcp: dict[str, Any]) -> list[CheckMessage]:
    errors: list[CheckMessage] = []
    tools = mcp["tools"]
    listed = isinstance(tools, (list, tuple)) and all(isinstance(t, str) for t in tools)
    if tools is not None and tools != ALL and not listed:
        errors.append(_bad("tools", f"None (off), {ALL!r} or a list of tool names"))
    for key in ("name", "version"):
        if mcp[key] is not None and not isinstance(mcp[key], str):
            errors.append(_bad(key, "a string or None"))
    for key in ("AUTHENTICATION_CLASSES", "PERMISSION_CLASSES"):
        value = mcp[key]
        if value is not None and not isinstance(value, (list, tuple)):
            errors.append(_bad(key, "a list of DRF classes (or dotted paths), or None"))
        for path in value if isinstance(value, (list, tuple)) else ():
            if isinstance(path, str):
                from django.utils.module_loading import import_string

                try:
                    import_string(path)
                except ImportError as exc:
                    errors.append(
                        Error(
                            f"{WHERE}[{key!r}]: cannot import {path!r}: {exc}",
                            id="toolnexus_django.E007",
                        )
                    )
    for key in ("MAX_REQUEST_BYTES", "MAX_CONCURRENT_CALLS"):
        value = mcp[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            errors.append(_bad(key, "an integer >= 1"))
    timeout = mcp["CALL_TIMEOUT"]
    number = isinstance(timeout, (int, float)) and not isinstance(timeout, bool)
    if timeout is not None and (not number or timeout <= 0):
        errors.append(_bad("CALL_TIMEOUT", "a positive number of seconds, or None"))
    if not isinstance(mcp["AUDIT"], bool):
        errors.append(_bad("AUDIT", "True or False"))
    return errors


def toolkit_names() -> list[str]:
    """The names of the tools the configured toolkit has (built, then closed,
    on a loop of its own: a check may run where a loop is running)."""
    from .agent.runtime import build_toolkit

    found: dict[str, Any] = {}

    async def build() -> None:
        toolkit = await build_toolkit()
        try:
            found["names"] = [t.name for t in toolkit.tools()]
        finally:
            await toolkit.close()

    def main() -> None:
        try:
            asyncio.run(build())
        except BaseException as exc:
            found["error"] = exc

    thread = threading.Thread(target=main, name="toolnexus-mcp-check", daemon=True)
    thread.start()
    thread.join(BUILD_TIMEOUT)
    if thread.is_alive():
        raise TimeoutError(f"building the toolkit took longer than {BUILD_TIMEOUT:.0f}s")
    if "error" in found:
        raise found["error"]
    return list(found["names"])


def _check_names(wanted: list[str]) -> list[CheckMessage]:
    try:
        names = toolkit_names()
    except Exception as exc:
        return [
            Warning(
                f"{WHERE}['tools'] could not be checked: the toolkit did not build ({exc})",
                id="toolnexus_django.W020",
            )
        ]
    missing = [name for name in wanted if name not in names]
    if not missing:
        return []
    return [
        Error(
            f"{WHERE}['tools'] names tool(s) the toolkit does not have: "
            f"{', '.join(map(repr, missing))}",
            hint=f"The toolkit's tools: {', '.join(names) or '(none)'}.",
            id="toolnexus_django.E021",
        )
    ]
