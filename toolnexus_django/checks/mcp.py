"""``MCP``: the toolkit as an MCP server — its values, and whether the tools
it names exist (the toolkit is built once, to look, when ``tools`` is a list)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterable
from typing import Any

from django.core.checks import CheckMessage

from ..agent.runtime import build_toolkit
from ..conf import setting_name
from ..mcp.config import ALL
from .problems import problem
from .sections import check_class_list, dict_section, seconds, whole

#: How long building the toolkit to check the tool names may take.
BUILD_TIMEOUT = 60.0
#: The ids of the DRF class lists: (not a list, an entry that does not import).
CLASS_LISTS = {"AUTHENTICATION_CLASSES": ("E705", "E706"), "PERMISSION_CLASSES": ("E707", "E708")}


def _names(tools: Any) -> bool:
    return isinstance(tools, (list, tuple)) and all(isinstance(t, str) for t in tools)


def check_mcp(app_configs: Iterable[Any] | None = None, **kwargs: Any) -> list[CheckMessage]:
    mcp, errors = dict_section("MCP", not_dict="E700", unknown="E701")
    if mcp is None:
        return errors
    errors += _check_values(mcp)
    if _names(mcp["tools"]):
        errors += _check_names(list(mcp["tools"]))
    return errors


def _bad(code: str, key: str, what: str, value: Any) -> CheckMessage:
    return problem(code, f"{setting_name('MCP', key)} must be {what}, not {value!r}")


def _check_values(mcp: dict[str, Any]) -> list[CheckMessage]:
    errors: list[CheckMessage] = []
    tools = mcp["tools"]
    if tools is not None and tools != ALL and not _names(tools):
        errors.append(_bad("E702", "tools", f"None (off), {ALL!r} or a list of tool names", tools))
    for code, key in (("E703", "name"), ("E704", "version")):
        if mcp[key] is not None and not isinstance(mcp[key], str):
            errors.append(_bad(code, key, "a string or None", mcp[key]))
    for key, (not_list, unimportable) in CLASS_LISTS.items():
        errors += check_class_list(mcp[key], not_list, unimportable, "MCP", key)
    for code, key in (("E709", "MAX_REQUEST_BYTES"), ("E710", "MAX_CONCURRENT_CALLS")):
        if not whole(mcp[key]):
            errors.append(_bad(code, key, "an integer >= 1", mcp[key]))
    timeout = mcp["CALL_TIMEOUT"]
    if timeout is not None and not seconds(timeout):
        errors.append(
            _bad("E711", "CALL_TIMEOUT", "a positive number of seconds, or None", timeout)
        )
    if not isinstance(mcp["AUDIT"], bool):
        errors.append(_bad("E712", "AUDIT", "True or False", mcp["AUDIT"]))
    return errors


def toolkit_names() -> list[str]:
    """The names of the tools the configured toolkit has (built, then closed,
    on a loop of its own: a check may run where a loop is running)."""
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
    where = setting_name("MCP", "tools")
    try:
        names = toolkit_names()
    except Exception as exc:
        return [
            problem(
                "W020",
                f"{where} could not be checked: the toolkit did not build ({exc})",
            )
        ]
    missing = [name for name in wanted if name not in names]
    if not missing:
        return []
    return [
        problem(
            "E021",
            f"{where} names tool(s) the toolkit does not have: {', '.join(map(repr, missing))}",
            hint=f"The toolkit's tools: {', '.join(names) or '(none)'}.",
        )
    ]
