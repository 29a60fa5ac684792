"""Reference pages generated from the code, so they cannot drift from it.

A page holds a marker, alone on its line; when Sphinx reads the page (``source-read``) the marker is
replaced by Markdown made here:

- ``<!-- toolnexus:settings -->``: every key of ``conf.DEFAULTS`` (the keys of its dict
  sections too), its default, and its meaning from ``conf_docs.DOCS``;
- ``<!-- toolnexus:checks -->``: every system check id of ``checks.PROBLEMS``, and the
  retired ids of ``checks.RETIRED_IDS`` with the ids they became;
- ``<!-- toolnexus:commands -->``: each management command's ``--help``, from its own parser.

The functions that make the Markdown need Django set up, not Sphinx: the tests
(tests/docs/test_docs_reference.py) call them directly.
"""

from __future__ import annotations

import re
from typing import Any

SETTINGS_MARKER = "<!-- toolnexus:settings -->"
CHECKS_MARKER = "<!-- toolnexus:checks -->"
COMMANDS_MARKER = "<!-- toolnexus:commands -->"
#: The app's management commands, in the order the reference shows them.
COMMANDS = ("toolnexus_serve", "toolnexus_sweep", "toolnexus_prune")

#: The check id groups, by hundred (checks/problems.py's docstring).
GROUPS = {
    "0": "Ids kept from before each problem had its own",
    "1": "E1xx: the `TOOLNEXUS` dict and its top-level keys",
    "2": "E2xx: `STORE`",
    "3": "E3xx: `AGENT`, `TOOLKIT`, `CLIENT`",
    "4": "E4xx: the numbers",
    "5": "E5xx: `REVIEW`",
    "6": "E6xx: `PUSH`",
    "7": "E7xx: `MCP`",
    "8": "E8xx: `GRPC`",
    "9": "E9xx: `TRACING` (E90x), `METRICS` (E95x)",
}


def setting_keys() -> list[str]:
    """Every key of ``DEFAULTS``, a dict section's keys as ``"SECTION.key"``, in order."""
    from toolnexus_django.conf import DEFAULTS

    keys: list[str] = []
    for key, default in DEFAULTS.items():
        keys.append(key)
        if isinstance(default, dict):
            keys.extend(f"{key}.{sub}" for sub in default)
    return keys


def undocumented() -> list[str]:
    """Keys of ``DEFAULTS`` without a meaning in ``conf_docs.DOCS``."""
    from toolnexus_django.conf_docs import DOCS

    return [key for key in setting_keys() if not DOCS.get(key, "").strip()]


def unknown_docs() -> list[str]:
    """Entries of ``conf_docs.DOCS`` that name no key of ``DEFAULTS`` (a stale entry)."""
    from toolnexus_django.conf_docs import DOCS

    return sorted(set(DOCS) - set(setting_keys()))


def _literal(value: Any) -> str:
    text = repr(value)
    return f"``{text}``" if "`" in text else f"`{text}`"


def _anchor(key: str) -> str:
    """A label per key: ``"REVIEW.HOLD_SECONDS"`` -> ``setting-review-hold-seconds``."""
    key = key.replace("*", "any-other")  # ANSWERERS["*"]
    return "setting-" + re.sub(r"[^a-z0-9]+", "-", key.lower()).strip("-")


def settings_markdown() -> str:
    """The settings reference: one heading per key, its default and its meaning."""
    from toolnexus_django.conf import DEFAULTS
    from toolnexus_django.conf_docs import DOCS

    out: list[str] = []
    for key, default in DEFAULTS.items():
        out += [f"({_anchor(key)})=", f"### `{key}`", ""]
        if not isinstance(default, dict):
            out += [f"Default: {_literal(default)}", ""]
        out += [DOCS[key], ""]
        if isinstance(default, dict):
            for sub, value in default.items():
                dotted = f"{key}.{sub}"
                out += [f"({_anchor(dotted)})=", f"#### `{key}[{sub!r}]`", ""]
                out += [f"Default: {_literal(value)}", "", DOCS[dotted], ""]
    return "\n".join(out)


def listed_check_ids() -> list[str]:
    """The ids the checks reference lists: every problem's, then every retired one."""
    from toolnexus_django.checks.problems import PROBLEMS, RETIRED_IDS

    return [*PROBLEMS, *RETIRED_IDS]


def _group(code: str) -> str:
    return "0" if code[1] == "0" else code[1]


def checks_markdown() -> str:
    """The check ids by group (``PROBLEMS``), then the retired ids (``RETIRED_IDS``)."""
    from toolnexus_django.checks.problems import PREFIX, PROBLEMS, RETIRED_IDS

    out: list[str] = []
    for group, title in GROUPS.items():
        codes = [code for code in PROBLEMS if _group(code) == group]
        out += [f"## {title}", "", "| id | level | problem |", "|---|---|---|"]
        for code in codes:
            level = "Error" if code.startswith("E") else "Warning"
            problem = PROBLEMS[code].replace("|", "\\|")
            out.append(f"| `{PREFIX}{code}` | {level} | {problem} |")
        out.append("")
    out += [
        "## Retired ids",
        "",
        "Never raised again, never reused. `SILENCED_SYSTEM_CHECKS` naming one silences",
        f"nothing and warns (`{PREFIX}W102`): name the ids it became instead.",
        "",
        "| retired id | became |",
        "|---|---|",
    ]
    for old, news in RETIRED_IDS.items():
        out.append(f"| `{PREFIX}{old}` | {', '.join(f'`{new}`' for new in news)} |")
    out.append("")
    return "\n".join(out)


def commands_markdown() -> str:
    """Each command's heading and its ``manage.py help`` text, as its parser prints it."""
    import os

    from django.core.management import load_command_class

    out: list[str] = []
    columns = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"  # argparse wraps to the terminal: a fixed width
    try:
        for name in COMMANDS:
            command = load_command_class("toolnexus_django", name)
            text = command.create_parser("manage.py", name).format_help().rstrip()
            out += [f"## `{name}`", "", "```text", text, "```", ""]
    finally:
        if columns is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = columns
    return "\n".join(out)


def fill(text: str) -> str:
    """``text`` with each marker that is a line of its own replaced by its Markdown."""
    for marker, make in (
        (SETTINGS_MARKER, settings_markdown),
        (CHECKS_MARKER, checks_markdown),
        (COMMANDS_MARKER, commands_markdown),
    ):
        pattern = re.compile(rf"^{re.escape(marker)}$", re.MULTILINE)
        if pattern.search(text):
            generated = make()
            text = pattern.sub(generated.replace("\\", "\\\\"), text)
    return text


def _fill(app: Any, docname: str, source: list[str]) -> None:
    source[0] = fill(source[0])


def setup(app: Any) -> dict[str, Any]:
    app.connect("source-read", _fill)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
