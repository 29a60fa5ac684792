"""One meaning per name (issue 20): a public function or class name defined in
more than one module of the package means the same thing in each — the same
operation at another layer — or this test fails, naming the modules.

A name added to SAME_MEANING says why the definitions are one meaning.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "toolnexus_django"

#: Names defined in several modules on purpose, and the one meaning they share.
SAME_MEANING: dict[str, str] = {
    "Command": "a management command (Django's required class name)",
    "answer": "answer a waiting Task: the reviewer's move, and the test helper that makes it",
    "cancel": "cancel a Task: the wire's operation, and the move it makes",
    "list_tasks": "ListTasks: the wire's operation, and the page it reads",
    "fulfil": "run a submitted Task: the enqueued job, and the run it starts",
    "resume": "continue an answered Task: the enqueued job, and the run it starts",
    "remember": "keep a finished run's transcript as its conversation (runner, store)",
    "invalid": "the refusal of input that breaks a rule, in each layer's error type",
    "check_version": "refuse an A2A-Version the binding does not speak, per binding",
    "lease_seconds": "how long a worker's hold lasts before another may take the work over",
    "Reply": "what a call to another party came back with (a webhook, an MCP transport)",
    "Turn": "one message of a model's conversation (a transcript's, a scripted model's)",
    "Refused": "a refusal by the endpoint's DRF classes, as a binding's error (HTTP's, gRPC's)",
}


def definitions() -> dict[str, set[str]]:
    where: dict[str, set[str]] = defaultdict(set)
    for path in sorted(PACKAGE.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        for node in ast.parse(path.read_text()).body:
            defines = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
            if isinstance(node, defines) and not node.name.startswith("_"):
                where[node.name].add(module)
    return where


def test_a_name_defined_in_two_modules_has_one_meaning() -> None:
    twice = {name: mods for name, mods in definitions().items() if len(mods) > 1}
    unexplained = {name: sorted(mods) for name, mods in twice.items() if name not in SAME_MEANING}
    assert unexplained == {}, (
        "defined in several modules with no shared meaning on record: rename one, "
        "or say in SAME_MEANING why it is one meaning"
    )


def test_every_name_on_record_is_still_defined_twice() -> None:
    twice = {name for name, mods in definitions().items() if len(mods) > 1}
    stale = sorted(set(SAME_MEANING) - twice)
    assert stale == []
