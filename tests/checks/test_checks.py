"""System checks (toolnexus_django/checks/): every id fires for its
misconfiguration and for nothing else, through Django's real check registry.
(The sections' names are the ids before each problem had its own: README,
"System checks", maps them to the new ones.)"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.core import checks
from django.core.checks import CheckMessage
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from toolnexus_django.checks import check_settings
from toolnexus_django.stores import InMemoryTaskStore, TaskStore

REPO_ROOT = Path(__file__).resolve().parents[2]
SKILLS_DIR = REPO_ROOT / "testproject" / "skills"
PREFIX = "toolnexus_django."

#: A complete, valid TOOLNEXUS that does not depend on the environment.
GOOD: dict[str, Any] = {
    "STORE": "memory",
    "AGENT": {"name": "filing-desk", "description": "files claims", "skills": ["summarize"]},
    "TOOLKIT": {
        "skills_dir": SKILLS_DIR,
        "builtins": False,
        "tools": ["testproject.demo.file_expense"],
    },
    "CLIENT": {
        "base_url": "http://127.0.0.1:9/v1",
        "style": "openai",
        "model": "m",
        "api_key": "k",
    },
    "AUTHENTICATION_CLASSES": ["rest_framework.authentication.SessionAuthentication"],
    "PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "TASK_BACKEND": None,
    "MAX_RUNS": 4,
    "RUN_TIMEOUT": 30,
}


class ImportableStore(InMemoryTaskStore):
    """For ``STORE = "tests.checks.test_checks.ImportableStore"``."""


def ours(messages: list[CheckMessage]) -> list[CheckMessage]:
    return [m for m in messages if (m.id or "").startswith(PREFIX)]


def our_messages() -> list[CheckMessage]:
    """Our messages as ``manage.py check`` would see them (the real registry,
    without the ids the settings silence: the demo silences W002)."""
    from django.conf import settings

    silenced = set(settings.SILENCED_SYSTEM_CHECKS)
    return [m for m in ours(checks.run_checks()) if m.id not in silenced]


def ids_of(messages: list[CheckMessage]) -> set[str]:
    return {str(m.id).removeprefix(PREFIX) for m in messages}


@pytest.fixture
def ids_for(settings: Any) -> Any:
    """``ids_for(**overrides)``: the ids raised for GOOD with ``overrides``."""

    def run(**overrides: Any) -> set[str]:
        settings.TOOLNEXUS = {**GOOD, **overrides}
        return ids_of(our_messages())

    return run


def test_a_complete_valid_setting_raises_nothing(ids_for: Any) -> None:
    assert ids_for() == set()


def test_the_testproject_settings_pass_the_checks() -> None:
    assert our_messages() == []
    call_command(
        "check", stdout=io.StringIO(), stderr=io.StringIO()
    )  # raises SystemCheckError on errors


def test_check_is_registered_with_the_compatibility_tag(settings: Any) -> None:
    settings.TOOLNEXUS = {**GOOD, "MAX_RUNS": 0}
    assert "toolnexus_django.E401" in {m.id for m in checks.run_checks(tags=["compatibility"])}
    assert check_settings(None) == ours(checks.run_checks())


# -- E001, retired: E100, E101, E302, E312, E322 ---------------------------------


def test_e001_unknown_key(ids_for: Any) -> None:
    assert ids_for(STROE="memory") == {"E101"}


def test_e001_names_each_unknown_key_and_the_known_ones(settings: Any) -> None:
    settings.TOOLNEXUS = {**GOOD, "STROE": "memory", "AGNET": {}}
    errors = our_messages()
    assert [m.id for m in errors] == ["toolnexus_django.E101"] * 2
    assert "'STROE'" in errors[0].msg and "'AGNET'" in errors[1].msg
    assert "STORE" in str(errors[0].hint) and "CLIENT" in str(errors[0].hint)


@pytest.mark.parametrize("value", ["memory", None, ["STORE"], 42], ids=repr)
def test_e001_not_a_dict(settings: Any, value: Any) -> None:
    settings.TOOLNEXUS = value
    errors = our_messages()
    assert ids_of(errors) == {"E100"}
    assert errors[0].level == checks.ERROR


def test_no_toolnexus_setting_at_all_only_warns_about_the_client(settings: Any) -> None:
    del settings.TOOLNEXUS
    messages = our_messages()
    assert ids_of(messages) == {"W001"}
    assert all(m.level == checks.WARNING for m in messages)


# -- E002, retired: E201-E205 ----------------------------------------------------


@pytest.mark.parametrize(
    ("store", "expected"),
    [("redis", "E201"), ("file:", "E203"), ("django:", "E201"), (42, "E201"),
     ("no.such.module.Store", "E202"), ("tests.checks.test_checks.PREFIX", "E201")],
    ids=repr,
)  # fmt: skip
def test_e002_bad_store(ids_for: Any, store: Any, expected: str) -> None:
    assert ids_for(STORE=store) == {expected}


def test_e002_unknown_database_alias(ids_for: Any) -> None:
    assert ids_for(STORE="django:nosuchdb") == {"E204"}


def test_e002_file_dir_under_a_regular_file(ids_for: Any, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    assert ids_for(STORE=f"file:{blocker / 'tasks'}") == {"E203"}
    assert ids_for(STORE=f"file:{blocker / 'deeper' / 'tasks'}") == {"E203"}
    assert ids_for(STORE=f"file:{blocker}") == {"E203"}  # exists, but is a file


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere")
def test_e002_file_dir_in_a_read_only_parent(ids_for: Any, tmp_path: Path) -> None:
    parent = tmp_path / "ro"
    parent.mkdir()
    parent.chmod(0o500)
    try:
        assert ids_for(STORE=f"file:{parent / 'tasks'}") == {"E203"}
    finally:
        parent.chmod(0o700)


def test_file_store_dirs_that_can_be_created_pass(ids_for: Any, tmp_path: Path) -> None:
    assert ids_for(STORE=f"file:{tmp_path}") == set()
    nested = tmp_path / "not" / "yet" / "there"
    assert ids_for(STORE=f"file:{nested}") == set()
    assert not (tmp_path / "not").exists(), "a check must not create anything"


class CustomStore(TaskStore):
    def get(self, id: str) -> None:
        return None

    def save(self, task: dict[str, Any]) -> None:
        pass


@pytest.mark.parametrize(
    "store",
    [
        None,
        "memory",
        "django",
        "django:default",
        CustomStore(),
        CustomStore,
        "tests.checks.test_checks.ImportableStore",
    ],
    ids=repr,
)
def test_accepted_stores_pass(ids_for: Any, store: Any) -> None:
    assert ids_for(STORE=store) == set()


# -- E003 ------------------------------------------------------------------------


def test_e003_rest_framework_not_installed(settings: Any) -> None:
    settings.TOOLNEXUS = GOOD
    assert our_messages() == []
    settings.INSTALLED_APPS = [a for a in settings.INSTALLED_APPS if a != "rest_framework"]
    assert ids_of(our_messages()) == {"E003"}


# -- E004 ------------------------------------------------------------------------


def test_e004_missing_skills_dir(ids_for: Any, tmp_path: Path) -> None:
    toolkit = {**GOOD["TOOLKIT"], "skills_dir": tmp_path / "no-such-dir"}
    assert ids_for(TOOLKIT=toolkit) == {"E004"}


def test_e004_skills_dir_is_a_file(ids_for: Any, tmp_path: Path) -> None:
    (tmp_path / "skills.txt").write_text("")
    toolkit = {**GOOD["TOOLKIT"], "skills_dir": str(tmp_path / "skills.txt")}
    assert ids_for(TOOLKIT=toolkit) == {"E004"}


def test_e004_one_error_per_bad_dir_in_a_list(settings: Any, tmp_path: Path) -> None:
    toolkit = {**GOOD["TOOLKIT"], "skills_dir": [SKILLS_DIR, str(tmp_path / "gone"), tmp_path]}
    settings.TOOLNEXUS = {**GOOD, "TOOLKIT": toolkit}
    errors = our_messages()
    assert [m.id for m in errors] == ["toolnexus_django.E004"]
    assert "gone" in errors[0].msg


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read anything")
def test_e004_unreadable_skills_dir(ids_for: Any, tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0)
    try:
        assert ids_for(TOOLKIT={**GOOD["TOOLKIT"], "skills_dir": locked}) == {"E004"}
    finally:
        locked.chmod(0o700)


def test_existing_skills_dirs_pass(ids_for: Any, tmp_path: Path) -> None:
    assert ids_for(TOOLKIT={**GOOD["TOOLKIT"], "skills_dir": str(SKILLS_DIR)}) == set()
    assert ids_for(TOOLKIT={**GOOD["TOOLKIT"], "skills_dir": [SKILLS_DIR, tmp_path]}) == set()
    assert ids_for(TOOLKIT={**GOOD["TOOLKIT"], "skills_dir": None}) == set()


# -- E005 ------------------------------------------------------------------------


@pytest.mark.parametrize("style", ["gemini", "OpenAI", "bedrock"])
def test_e005_unknown_client_style(ids_for: Any, style: str) -> None:
    assert ids_for(CLIENT={**GOOD["CLIENT"], "style": style}) == {"E005"}


@pytest.mark.parametrize("style", ["openai", "anthropic", None])
def test_known_client_styles_pass(ids_for: Any, style: Any) -> None:
    assert ids_for(CLIENT={**GOOD["CLIENT"], "style": style}) == set()


# -- E006, retired: E110-E140, E301-E321 -----------------------------------------


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"AGENT": "filing-desk"}, "E301"),
        ({"AGENT": {"name": "x", "skills": "summarize"}}, "E303"),
        ({"TOOLKIT": 42}, "E311"),
        ({"TOOLKIT": ["testproject"]}, "E311"),
        ({"TOOLKIT": {**GOOD["TOOLKIT"], "tools": "testproject.demo.file_expense"}}, "E315"),
        ({"TOOLKIT": {**GOOD["TOOLKIT"], "skills_dir": 42}}, "E314"),
        ({"CLIENT": 42}, "E321"),
        ({"CLIENT": ["http://x"]}, "E321"),
        ({"AUTHENTICATION_CLASSES": "rest_framework.authentication.SessionAuthentication"}, "E110"),
        ({"PERMISSION_CLASSES": {"rest_framework.permissions.AllowAny": True}}, "E112"),
        ({"EXTENDED_AGENT_CARD": {"skills": []}}, "E130"),
    ],
    ids=lambda o: repr(o)[:60],
)
def test_e006_wrong_types(ids_for: Any, overrides: dict[str, Any], expected: str) -> None:
    assert ids_for(**overrides) == {expected}


def test_tools_as_a_string_is_one_error_not_one_per_character(settings: Any) -> None:
    settings.TOOLNEXUS = {
        **GOOD,
        "TOOLKIT": {**GOOD["TOOLKIT"], "tools": "testproject.demo.file_expense"},
    }
    assert len(our_messages()) == 1


# -- E007, retired: E111-E141, E313-E323 -----------------------------------------


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"TOOLKIT": "no.such.toolkit_factory"}, "E313"),
        ({"CLIENT": "no.such.client_factory"}, "E323"),
        ({"CLIENT": "testproject.demo.no_such_client"}, "E323"),
        ({"TOOLKIT": {**GOOD["TOOLKIT"], "tools": ["no.such.tool"]}}, "E316"),
        (
            {"TOOLKIT": {**GOOD["TOOLKIT"], "tools": ["testproject.demo.file_expense", "nodots"]}},
            "E316",
        ),
        ({"AUTHENTICATION_CLASSES": ["no.such.Authentication"]}, "E111"),
        ({"PERMISSION_CLASSES": ["rest_framework.permissions.NoSuchPermission"]}, "E113"),
        ({"EXTENDED_AGENT_CARD": "no.such.extended_card"}, "E131"),
    ],
    ids=lambda o: repr(o)[:60],
)
def test_e007_dotted_paths_that_do_not_import(
    ids_for: Any, overrides: dict[str, Any], expected: str
) -> None:
    assert ids_for(**overrides) == {expected}


def test_importable_dotted_paths_pass(ids_for: Any) -> None:
    assert ids_for(CLIENT="testproject.demo.offline_client") == set()
    assert ids_for(AUTHENTICATION_CLASSES=[], PERMISSION_CLASSES=None) == set()
    assert ids_for(EXTENDED_AGENT_CARD=None) == set()
    assert ids_for(EXTENDED_AGENT_CARD=lambda request, card: card) == set()
    assert ids_for(AUTHENTICATION_CLASSES=None) == set()


# -- E008 ------------------------------------------------------------------------


def test_e008_task_backend_not_in_tasks(ids_for: Any, settings: Any) -> None:
    assert ids_for(TASK_BACKEND="workers") == {"E008"}
    settings.TASKS = {
        "default": {"BACKEND": "django_tasks.backends.immediate.ImmediateBackend"},
        "workers": {"BACKEND": "django_tasks.backends.immediate.ImmediateBackend"},
    }
    assert ids_for(TASK_BACKEND="workers") == set()
    assert ids_for(TASK_BACKEND="default") == set()
    assert ids_for(TASK_BACKEND="elsewhere") == {"E008"}
    assert ids_for(TASK_BACKEND=None) == set()


# -- E009, retired: E4xx ---------------------------------------------------------


@pytest.mark.parametrize("value", [0, -1, "8", True, 1.5, None], ids=repr)
def test_e009_worker_threads(ids_for: Any, value: Any) -> None:
    assert ids_for(MAX_RUNS=value) == {"E401"}


@pytest.mark.parametrize("value", [-1, 0, "10", True, [5]], ids=repr)
def test_e009_run_timeout(ids_for: Any, value: Any) -> None:
    assert ids_for(RUN_TIMEOUT=value) == {"E420"}


@pytest.mark.parametrize("value", [0, 1023, -1, "65536", True, 65536.0, None], ids=repr)
def test_e009_max_header_bytes(ids_for: Any, value: Any) -> None:
    assert ids_for(MAX_HEADER_BYTES=value) == {"E410"}


@pytest.mark.parametrize(
    "overrides",
    [{"MAX_RUNS": 1}, {"MAX_RUNS": 64}, {"RUN_TIMEOUT": 0.5}, {"RUN_TIMEOUT": None},
     {"MAX_HEADER_BYTES": 1024}, {"MAX_HEADER_BYTES": 1 << 20}],
    ids=repr,
)  # fmt: skip
def test_positive_numbers_pass(ids_for: Any, overrides: dict[str, Any]) -> None:
    assert ids_for(**overrides) == set()


@pytest.mark.parametrize(
    "metrics",
    [None, {"TOKEN": "s3cret"}, {"PERMISSION": "toolnexus_django.view_taskrecord"},
     {"TOKEN": "s3cret", "PERMISSION": "auth.view_user"}],
    ids=repr,
)  # fmt: skip
def test_metrics_settings_that_admit_someone_pass(ids_for: Any, metrics: Any) -> None:
    assert ids_for(METRICS=metrics) == set()


# -- W001 ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "client",
    [
        {"style": "openai"},
        {"base_url": "http://127.0.0.1:9/v1", "model": None},
        {"model": "m", "api_key": "k"},
        {"base_url": "", "model": "m"},
    ],
    ids=repr,
)
def test_w001_client_without_base_url_or_model(settings: Any, client: dict[str, Any]) -> None:
    settings.TOOLNEXUS = {**GOOD, "CLIENT": client}
    messages = our_messages()
    assert ids_of(messages) == {"W001"}
    assert messages[0].level == checks.WARNING
    # A warning does not stop `manage.py check` (nor any other command).
    call_command("check", stdout=io.StringIO(), stderr=io.StringIO())


# -- W004 ------------------------------------------------------------------------


@pytest.mark.parametrize("api_key", ["", None], ids=repr)
def test_w004_client_without_an_api_key_anywhere(
    settings: Any, monkeypatch: pytest.MonkeyPatch, api_key: str | None
) -> None:
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    settings.TOOLNEXUS = {**GOOD, "CLIENT": {**GOOD["CLIENT"], "api_key": api_key}}
    messages = our_messages()
    assert ids_of(messages) == {"W004"}
    assert messages[0].level == checks.WARNING
    assert "OPENAI_API_KEY" in (messages[0].hint or "")
    # The pasted Install's empty default must not stop check or migrate.
    call_command("check", stdout=io.StringIO(), stderr=io.StringIO())


@pytest.mark.parametrize("name", ["OPENROUTER_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"])
def test_w004_not_when_the_environment_holds_a_key(
    settings: Any, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    # toolnexus's client falls back to these when api_key is empty.
    for other in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(other, raising=False)
    monkeypatch.setenv(name, "sk-test")
    settings.TOOLNEXUS = {**GOOD, "CLIENT": {**GOOD["CLIENT"], "api_key": ""}}
    assert ids_of(our_messages()) == set()


def test_an_error_does_stop_manage_py_check(settings: Any) -> None:
    settings.TOOLNEXUS = {**GOOD, "MAX_RUNS": 0}
    with pytest.raises(SystemCheckError, match=r"toolnexus_django\.E401"):
        call_command("check", stdout=io.StringIO(), stderr=io.StringIO())


# -- a real `manage.py check` ----------------------------------------------------


@pytest.mark.slow
def test_manage_py_check_subprocess_reports_the_ids(tmp_path: Path) -> None:
    (tmp_path / "bad_settings.py").write_text(
        "from testproject.settings import *  # noqa: F403\n"
        "TOOLNEXUS = {**TOOLNEXUS, 'MAX_RUNS': 0, 'STROE': 'memory'}\n"
    )
    (tmp_path / "good_settings.py").write_text("from testproject.settings import *  # noqa: F403\n")
    env = {**os.environ, "PYTHONPATH": f"{REPO_ROOT}{os.pathsep}{tmp_path}"}

    def check(settings_module: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "manage.py", "check", f"--settings={settings_module}"],
            cwd=REPO_ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    bad = check("bad_settings")
    assert bad.returncode == 1, (bad.stdout, bad.stderr)
    assert "toolnexus_django.E401" in bad.stderr
    assert "toolnexus_django.E101" in bad.stderr
    assert "Traceback" not in bad.stderr

    good = check("good_settings")
    assert good.returncode == 0, (good.stdout, good.stderr)
    assert "toolnexus_django." not in good.stdout + good.stderr


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"REVIEW_NOTIFY_EMAILS": "ops@example.com"}, "toolnexus_django.E511"),
        ({"REVIEW_NOTIFY_EMAILS": ["not-an-address"]}, "toolnexus_django.E511"),
        ({"REVIEW_BASE_URL": "ops.example.com"}, "toolnexus_django.E512"),
        ({"EXPIRY_SWEEP_INTERVAL": -1}, "toolnexus_django.E431"),
        ({"EXPIRY_SWEEP_INTERVAL": "5"}, "toolnexus_django.E431"),
        ({"GRACE_SECONDS": -1}, "toolnexus_django.E432"),
        ({"GRACE_SECONDS": "10"}, "toolnexus_django.E432"),
        ({"CREDENTIAL_CACHE_SECONDS": -1}, "toolnexus_django.E433"),
        ({"CREDENTIAL_CACHE_SECONDS": "5"}, "toolnexus_django.E433"),
        ({"STREAM_CHUNK_SECONDS": -0.1}, "toolnexus_django.E434"),
        ({"STREAM_CHUNK_CHARS": 0}, "toolnexus_django.E411"),
        ({"STREAM_LIVE_UPDATES": 1}, "toolnexus_django.E435"),
        ({"TRACING": 1}, "toolnexus_django.E900"),
    ],
)
def test_review_settings_are_checked(
    settings: Any, overrides: dict[str, Any], expected: str
) -> None:
    from toolnexus_django.checks import check_settings

    settings.TOOLNEXUS = {**settings.TOOLNEXUS, **overrides}
    assert expected in {m.id for m in check_settings(None)}


def test_good_review_settings_pass(settings: Any) -> None:
    from toolnexus_django.checks import check_settings

    # Written where they live now (the old top-level keys warn, W101).
    review = {"NOTIFY_EMAILS": ["ops@example.com"], "BASE_URL": "https://ops.example.com"}
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "REVIEW": review, "EXPIRY_SWEEP_INTERVAL": 0}
    assert not [m for m in check_settings(None) if m.id.startswith("toolnexus_django")]


@pytest.mark.parametrize(
    ("key", "bad", "expected"),
    [
        ("LEASE_SECONDS", 0, "E421"),
        ("MAX_ATTEMPTS", 0, "E404"),
        ("MAX_ATTEMPTS", 1.5, "E404"),
        ("REQUEUE_AFTER", -5, "E422"),
        ("BLOCKING_TIMEOUT", "60", "E423"),
        ("STREAM_MAX_SECONDS", None, "E424"),
        ("STREAM_HEARTBEAT", 0, "E425"),
        ("MAX_HELD_REQUESTS", 0, "E405"),
        ("MAX_MODEL_RESPONSE_BYTES", 0, "E409"),
        ("MAX_MODEL_RESPONSE_BYTES", None, "E409"),
        ("MAX_MODEL_RESPONSE_BYTES", "4MB", "E409"),
        ("MAX_MODEL_RESPONSE_BYTES", 1e6, "E409"),
    ],
)
def test_number_settings_are_checked(settings: Any, key: str, bad: Any, expected: str) -> None:
    from toolnexus_django.checks import check_settings

    settings.TOOLNEXUS = {**settings.TOOLNEXUS, key: bad}
    assert f"toolnexus_django.{expected}" in {m.id for m in check_settings(None)}


@pytest.mark.parametrize(
    ("value", "ok"), [("auto", True), (None, True), (42, False), ("no.such.Store", False)]
)
def test_conversations_setting_is_checked(settings: Any, value: Any, ok: bool) -> None:
    from toolnexus_django.checks import check_settings

    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "CONVERSATIONS": value, "MAX_HELD_REQUESTS": None}
    ids = {m.id for m in check_settings(None)} & {"toolnexus_django.E140", "toolnexus_django.E141"}
    assert (not ids) is ok


# -- who answers, and the bounds ---------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"ANSWERERS": {"approval": "anyone"}}, "E121"),
        ({"ANSWERERS": {"approval": []}}, "E121"),
        ({"ANSWERERS": "reviewer"}, "E120"),
        ({"TOOL_ANSWERERS": {"file_expense": ["reviewer", "boss"]}}, "E123"),
        ({"TOOL_ANSWERERS": ["file_expense"]}, "E122"),
    ],
    ids=repr,
)
def test_e006_answerers_that_say_nobody(
    ids_for: Any, overrides: dict[str, Any], expected: str
) -> None:
    assert ids_for(**overrides) == {expected}


def test_answerers_that_name_roles_pass(ids_for: Any) -> None:
    assert ids_for(ANSWERERS={"input": "reviewer", "*": ["requester"]}) == set()
    assert ids_for(TOOL_ANSWERERS={"ask_requester": ["requester", "reviewer"]}) == set()


@pytest.mark.parametrize(
    ("key", "expected"),
    [("MAX_OUTPUT_CHARS", "E406"), ("MAX_HISTORY_MESSAGES", "E407"),
     ("MAX_MEMORY_MESSAGES", "E408")],
)  # fmt: skip
@pytest.mark.parametrize("value", [0, -1, 1.5, None, "100"])
def test_e009_bounds(ids_for: Any, key: str, value: Any, expected: str) -> None:
    assert ids_for(**{key: value}) == {expected}


# -- typos inside the dict sections ----------------------------------------------------


@pytest.mark.parametrize(
    ("section", "typo", "a_known_key", "expected"),
    [("AGENT", "descripton", "description", "E302"), ("TOOLKIT", "skils", "skills_dir", "E312"),
     ("CLIENT", "modle", "model", "E322")],
)  # fmt: skip
def test_an_unknown_key_inside_a_section_is_e001_listing_the_known_ones(
    settings: Any, section: str, typo: str, a_known_key: str, expected: str
) -> None:
    settings.TOOLNEXUS = {**GOOD, section: {**GOOD.get(section, {}), typo: "x"}}
    [message] = [m for m in our_messages() if m.id == f"{PREFIX}{expected}"]
    assert f"TOOLNEXUS[{section!r}] has an unknown key {typo!r}" in message.msg
    assert a_known_key in (message.hint or "")


def test_the_toolnexus_keys_of_toolkit_and_client_are_known(ids_for: Any) -> None:
    # Keys this app passes through to toolnexus are not typos.
    toolkit = {**GOOD["TOOLKIT"], "disable_tools": [], "skill_sample_limit": 0}
    client = {**GOOD["CLIENT"], "timeout_ms": 1000, "retries": 0, "max_turns": 5}
    assert ids_for(TOOLKIT=toolkit, CLIENT=client) == set()
