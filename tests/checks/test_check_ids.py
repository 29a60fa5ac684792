"""One id per problem: a table of (the id, what it was before, a setting with
that one problem), walked through Django's real check registry. Every id of
``PROBLEMS`` is in it once; each row raises its id and nothing else; each id
is raised from one place in ``toolnexus_django/checks/``; the docs' checks
reference lists them all, and the retired ones with what they became."""

from __future__ import annotations

import ast
import re
import sys
from collections import Counter
from collections.abc import Callable
from typing import Any, NamedTuple

import pytest

from tests.checks.test_checks import GOOD, REPO_ROOT, ids_of, our_messages
from tests.layers import parse
from toolnexus_django.checks import PROBLEMS, RETIRED_IDS
from toolnexus_django.stores import InMemoryTaskStore

CHECKS = REPO_ROOT / "toolnexus_django" / "checks"
MISSING_DIR = str(REPO_ROOT / "no-such-skills-dir")


class FailingStore(InMemoryTaskStore):
    """For ``STORE = "tests.checks.test_check_ids.FailingStore"``: its constructor raises."""

    def __init__(self) -> None:
        raise RuntimeError("no store today")


class Case(NamedTuple):
    code: str
    #: The id this problem had before each problem had its own (None: new).
    before: str | None
    #: TOOLNEXUS overrides of GOOD (a non-dict replaces TOOLNEXUS).
    toolnexus: Any
    #: Django settings: a value, or a function of the current value.
    django: dict[str, Any] | None = None
    #: Modules that cannot be imported for this case (not installed).
    hidden: tuple[str, ...] = ()


def toolkit(**keys: Any) -> dict[str, Any]:
    return {"TOOLKIT": {**GOOD["TOOLKIT"], **keys}}


def client(**keys: Any) -> dict[str, Any]:
    return {"CLIENT": {**GOOD["CLIENT"], **keys}}


def section(name: str, **keys: Any) -> dict[str, Any]:
    return {name: keys}


def mcp(**keys: Any) -> dict[str, Any]:
    return {"MCP": {"tools": "__all__", **keys}}


def without(app: str) -> Callable[[list[str]], list[str]]:
    return lambda apps: [a for a in apps if a != app]


CASES: list[Case] = [
    # the dict and its top-level keys
    Case("E100", "E001", "memory"),
    Case("E101", "E001", {"STROE": "memory"}),
    Case("E003", "E003", {}, {"INSTALLED_APPS": without("rest_framework")}),
    Case("E008", "E008", {"TASK_BACKEND": "workers"}),
    Case("E110", "E006", {"AUTHENTICATION_CLASSES": "rest_framework.authentication.X"}),
    Case("E111", "E007", {"AUTHENTICATION_CLASSES": ["no.such.Authentication"]}),
    Case("E112", "E006", {"PERMISSION_CLASSES": {"rest_framework.permissions.AllowAny": 1}}),
    Case("E113", "E007", {"PERMISSION_CLASSES": ["no.such.Permission"]}),
    Case("E120", "E006", {"ANSWERERS": "reviewer"}),
    Case("E121", "E006", {"ANSWERERS": {"approval": "anyone"}}),
    Case("E122", "E006", {"TOOL_ANSWERERS": ["file_expense"]}),
    Case("E123", "E006", {"TOOL_ANSWERERS": {"file_expense": "boss"}}),
    Case("E130", "E006", {"EXTENDED_AGENT_CARD": {"skills": []}}),
    Case("E131", "E007", {"EXTENDED_AGENT_CARD": "no.such.extended_card"}),
    Case("E132", None, {"CARD_SIGNING_KEY": "no-such-key.pem"}),
    Case("E140", "E006", {"CONVERSATIONS": 42}),
    Case("E141", "E007", {"CONVERSATIONS": "no.such.Store"}),
    Case("W003", "W003", {"WORKER_THREADS": 8}),
    Case("W101", None, {"REVIEW_NOTIFY_EMAILS": ["ops@example.com"]}),
    Case("W102", None, {}, {"SILENCED_SYSTEM_CHECKS": ["toolnexus_django.E006"]}),
    # STORE
    Case("E201", "E002", {"STORE": "redis"}),
    Case("E202", "E002", {"STORE": "no.such.module.Store"}),
    Case("E203", "E002", {"STORE": "file:"}),
    Case("E204", "E002", {"STORE": "django:nosuchdb"}),
    Case("E205", "E002", {"STORE": "tests.checks.test_check_ids.FailingStore"}),
    Case("E206", None, {"EVENT_LISTENER": "no-such-database"}),
    Case("W207", None, {"EVENT_LISTENER": "host=127.0.0.1 port=6432 dbname=app"}),
    # AGENT, TOOLKIT, CLIENT
    Case("E301", "E006", {"AGENT": "filing-desk"}),
    Case("E302", "E001", {"AGENT": {**GOOD["AGENT"], "descripton": "x"}}),
    Case("E303", "E006", {"AGENT": {"name": "x", "skills": "summarize"}}),
    Case("E311", "E006", {"TOOLKIT": 42}),
    Case("E312", "E001", toolkit(skils="x")),
    Case("E313", "E007", {"TOOLKIT": "no.such.toolkit_factory"}),
    Case("E314", "E006", toolkit(skills_dir=42)),
    Case("E004", "E004", toolkit(skills_dir=MISSING_DIR)),
    Case("E315", "E006", toolkit(tools="testproject.demo.file_expense")),
    Case("E316", "E007", toolkit(tools=["no.such.tool"])),
    Case("E321", "E006", {"CLIENT": 42}),
    Case("E322", "E001", client(modle="m")),
    Case("E323", "E007", {"CLIENT": "no.such.client_factory"}),
    Case("E005", "E005", client(style="gemini")),
    Case("W001", "W001", {"CLIENT": {"style": "openai"}}),
    Case("W004", "W004", client(api_key="")),
    # the numbers
    Case("E401", "E009", {"MAX_RUNS": 0}),
    Case("E402", "E009", {"DATABASE_THREADS": 0}),
    Case("E403", "E009", {"TOOL_THREADS": 0}),
    Case("E404", "E009", {"MAX_ATTEMPTS": 0}),
    Case("E405", "E009", {"MAX_HELD_REQUESTS": 0}),
    Case("E406", "E009", {"MAX_OUTPUT_CHARS": 0}),
    Case("E407", "E009", {"MAX_HISTORY_MESSAGES": 0}),
    Case("E408", "E009", {"MAX_MEMORY_MESSAGES": 0}),
    Case("E409", "E009", {"MAX_MODEL_RESPONSE_BYTES": 0}),
    Case("E410", "E009", {"MAX_HEADER_BYTES": 1023}),
    Case("E420", "E009", {"RUN_TIMEOUT": 0}),
    Case("E421", "E009", {"LEASE_SECONDS": 0}),
    Case("E422", "E009", {"REQUEUE_AFTER": 0}),
    Case("E423", "E009", {"BLOCKING_TIMEOUT": 0}),
    Case("E424", "E009", {"STREAM_MAX_SECONDS": 0}),
    Case("E425", "E009", {"STREAM_HEARTBEAT": 0}),
    Case("E426", "E009", {"EVENT_POLL_INTERVAL": 0}),
    Case("E428", None, {"EVENT_FALLBACK_POLL_INTERVAL": 0}),
    Case("E427", "E009", {"READ_TIMEOUT": 0}),
    Case("E430", "E009", {"IDEMPOTENCY_WINDOW": -1}),
    Case("E431", "E009", {"EXPIRY_SWEEP_INTERVAL": -1}),
    Case("E432", None, {"GRACE_SECONDS": -1}),
    Case("E433", None, {"CREDENTIAL_CACHE_SECONDS": -1}),
    Case("E411", None, {"STREAM_CHUNK_CHARS": 0}),
    Case("E434", None, {"STREAM_CHUNK_SECONDS": -1}),
    Case("E435", None, {"STREAM_LIVE_UPDATES": "yes"}),
    # REVIEW
    Case("E500", "E011", {"REVIEW": "four eyes"}),
    Case("E501", "E001", section("REVIEW", REMIND_BEFOR=600)),
    Case("E502", "E011", section("REVIEW", HOLD_SECONDS=0)),
    Case("E503", "E011", section("REVIEW", APPROVALS=["wire_money"])),
    Case("E504", "E011", section("REVIEW", EDIT_ARGUMENTS="yes")),
    Case("E505", "E011", section("REVIEW", ALLOW_SELF_APPROVAL="yes")),
    Case("E506", "E011", section("REVIEW", REMIND_BEFORE=0)),
    Case("E507", "E011", section("REVIEW", REMIND_BEFORE=600, ESCALATE_AFTER=0)),
    Case("E508", "E011", section("REVIEW", REMIND_EMAILS="team@example.com")),
    Case("E509", "E011", section("REVIEW", ESCALATE_EMAILS=None)),
    Case("E510", "E011", section("REVIEW", EXPIRY_LOG_USER="")),
    Case("E511", "E010", section("REVIEW", NOTIFY_EMAILS="ops@example.com")),
    Case("E512", "E010", section("REVIEW", BASE_URL="ops.example.com")),
    Case("E012", "E012", section("REVIEW", ESCALATE_AFTER=300)),
    Case("W011", "W011", section("REVIEW", ALLOW_SELF_APPROVAL=True)),
    # PUSH
    Case("E600", "E006", {"PUSH": ["127.0.0.1"]}),
    Case("E601", "E001", section("PUSH", ALOWED_HOSTS=[])),
    Case("E602", "E006", section("PUSH", ALLOWED_HOSTS="127.0.0.1")),
    Case("E603", "E006", section("PUSH", ALLOWED_HOSTS=["hooks internal"])),
    Case("E604", "E009", section("PUSH", TIMEOUT=0)),
    Case("E605", "E009", section("PUSH", RETRY_DELAY=0)),
    Case("E606", "E009", section("PUSH", MAX_RETRY_DELAY=0)),
    Case("E607", "E009", section("PUSH", MAX_ATTEMPTS=0)),
    Case("E608", "E009", section("PUSH", THREADS=0)),
    Case("E609", "E006", section("PUSH", SIGNING_KEY="no-such-key.pem")),
    Case("W030", "W030", section("PUSH", ALLOWED_HOSTS=["169.254.169.254"])),
    # MCP
    Case("E700", "E020", {"MCP": "__all__"}),
    Case("E701", "E001", mcp(TIMEOUT=3)),
    Case("E702", "E020", mcp(tools="all")),
    Case("E703", "E020", mcp(name=3)),
    Case("E704", "E020", mcp(version=3)),
    Case("E705", "E020", mcp(AUTHENTICATION_CLASSES="rest_framework.authentication.X")),
    Case("E706", "E007", mcp(AUTHENTICATION_CLASSES=["no.such.Authentication"])),
    Case("E707", "E020", mcp(PERMISSION_CLASSES="rest_framework.permissions.X")),
    Case("E708", "E007", mcp(PERMISSION_CLASSES=["no.such.Permission"])),
    Case("E709", "E020", mcp(MAX_REQUEST_BYTES=0)),
    Case("E710", "E020", mcp(MAX_CONCURRENT_CALLS=0)),
    Case("E711", "E020", mcp(CALL_TIMEOUT=-1)),
    Case("E712", "E020", mcp(AUDIT="yes")),
    Case("E021", "E021", mcp(tools=["nope"])),
    Case("E800", None, {"GRPC": "127.0.0.1:50051"}),
    Case("E801", None, section("GRPC", ADDRESS=None, PORT=50051)),
    Case("E802", None, section("GRPC", ADDRESS="localhost")),
    Case("E803", None, section("GRPC", URL=50051)),
    Case("E804", None, section("GRPC", ADDRESS="127.0.0.1:50051"), hidden=("grpc",)),
    Case("W800", None, section("GRPC", ADDRESS="0.0.0.0:50051")),
    Case("E900", None, {"TRACING": "yes"}),
    Case("E901", None, {"TRACING": True}, hidden=("opentelemetry",)),
    # metrics
    Case("E950", None, {"METRICS": "secret"}),
    Case("E951", None, {"METRICS": {"TOKEN": "s3cret", "USERS": ["ops"]}}),
    Case("E952", None, {"METRICS": {}}),
    Case("E953", None, {"METRICS": {"TOKEN": ""}}),
    Case("E954", None, {"METRICS": {"PERMISSION": "view_metrics"}}),
    Case("E955", None, {"METRICS": {"TOKEN": "s3cret"}}, hidden=("prometheus_client",)),
    Case(
        "W020",
        "W020",
        {**mcp(tools=["skill"]), "TOOLKIT": "tests.checks.test_mcp_checks.no_toolkit"},
    ),
    # an endpoint open to anyone
    Case(
        "W002",
        "W002",
        {"PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"]},
        {"DEBUG": False, "SILENCED_SYSTEM_CHECKS": []},  # the demo silences it
    ),
]


@pytest.fixture
def ids_with(settings: Any, monkeypatch: pytest.MonkeyPatch) -> Callable[[Case], set[str]]:
    """The ids ``manage.py check`` reports for one case (no API key in the
    environment: GOOD has its own, W004's case has none)."""
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)

    def run(case: Case) -> set[str]:
        for module in case.hidden:
            monkeypatch.setitem(sys.modules, module, None)  # find_spec: not installed
        for name, value in (case.django or {}).items():
            setattr(settings, name, value(getattr(settings, name)) if callable(value) else value)
        toolnexus = case.toolnexus
        settings.TOOLNEXUS = {**GOOD, **toolnexus} if isinstance(toolnexus, dict) else toolnexus
        return ids_of(our_messages())

    return run


@pytest.mark.parametrize("case", CASES, ids=[c.code for c in CASES])
def test_each_problem_raises_its_id_and_nothing_else(
    ids_with: Callable[[Case], set[str]], case: Case
) -> None:
    assert ids_with(case) == {case.code}


def test_the_table_covers_every_id_once() -> None:
    codes = [c.code for c in CASES]
    assert [code for code, n in Counter(codes).items() if n > 1] == []
    assert set(codes) == set(PROBLEMS)


def test_each_problem_was_reported_before_under_its_old_id_or_a_retired_one() -> None:
    """The mapping the checks reference and the CHANGELOG give: a kept id is its
    own old id; a retired id lists every id it became (and only ids of PROBLEMS)."""
    for case in CASES:
        if case.before is None or case.before == case.code:
            continue
        assert case.code in RETIRED_IDS[case.before], case
    became = {new for news in RETIRED_IDS.values() for new in news}
    assert became <= set(PROBLEMS)
    assert became == {c.code for c in CASES if c.before in RETIRED_IDS}
    assert not set(RETIRED_IDS) & set(PROBLEMS), "a retired id is never reused"


def id_literals() -> Counter[str]:
    """Every "E123" / "W123" string in the checks' code (not the id table itself)."""
    found: Counter[str] = Counter()
    for path in sorted(CHECKS.glob("*.py")):
        if path.name == "problems.py":
            continue
        for node in ast.walk(parse(path.read_text(), path)):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if re.fullmatch(r"[EW]\d{3}", node.value):
                    found[node.value] += 1
    return found


def test_each_id_is_raised_from_one_place() -> None:
    literals = id_literals()
    assert {code: n for code, n in literals.items() if n != 1} == {}
    assert set(literals) == set(PROBLEMS)


def test_the_docs_list_every_id_and_map_each_retired_one() -> None:
    """The checks reference (docs/reference/checks.md) is generated from PROBLEMS and
    RETIRED_IDS; tests/docs/test_docs_reference.py holds it to every id raised here."""
    from tests.docs.test_docs_reference import ref

    page = ref.checks_markdown()
    for code in [*PROBLEMS, *RETIRED_IDS]:
        assert f"| `toolnexus_django.{code}` |" in page
