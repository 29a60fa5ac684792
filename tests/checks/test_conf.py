"""The TOOLNEXUS setting (toolnexus_django/conf.py): defaults, nested merge,
lazy reads that follow overrides, reload hooks."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings
from rest_framework.permissions import AllowAny, IsAuthenticated

from toolnexus_django.conf import (
    DEFAULTS,
    ToolnexusSettings,
    import_path,
    merge,
    setting_name,
    toolnexus_settings,
)

PRISTINE_DEFAULTS = copy.deepcopy(DEFAULTS)


@pytest.fixture(autouse=True)
def _defaults_untouched() -> Iterator[None]:
    yield
    assert DEFAULTS == PRISTINE_DEFAULTS, "a test (or the code under test) mutated DEFAULTS"


def test_empty_setting_gives_every_default(settings: Any) -> None:
    settings.TOOLNEXUS = {}
    assert toolnexus_settings.as_dict() == DEFAULTS
    assert toolnexus_settings.STORE == "memory"
    assert toolnexus_settings.MAX_RUNS == 256
    assert toolnexus_settings.RUN_TIMEOUT is None
    assert toolnexus_settings.TASK_BACKEND is None
    assert toolnexus_settings.AUTHENTICATION_CLASSES is None
    assert toolnexus_settings.AGENT["name"] == "toolnexus-agent"
    assert toolnexus_settings.CLIENT["style"] == "openai"
    assert toolnexus_settings.TOOLKIT == {
        "skills_dir": None,
        "mcp_config": None,
        "builtins": False,
        "tools": [],
    }


def test_missing_setting_gives_every_default(settings: Any) -> None:
    del settings.TOOLNEXUS
    assert toolnexus_settings.as_dict() == DEFAULTS


def test_a_non_dict_setting_reads_as_defaults(settings: Any) -> None:
    # Reported by check E100; reading it must not crash on the way there.
    settings.TOOLNEXUS = "memory"
    assert toolnexus_settings.STORE == "memory"
    assert toolnexus_settings.MAX_RUNS == 256


def test_top_level_values_replace_defaults(settings: Any) -> None:
    settings.TOOLNEXUS = {
        "STORE": "django",
        "MAX_RUNS": 2,
        "RUN_TIMEOUT": 12.5,
        "PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
    }
    assert toolnexus_settings.STORE == "django"
    assert toolnexus_settings.MAX_RUNS == 2
    assert toolnexus_settings.RUN_TIMEOUT == 12.5
    assert toolnexus_settings.PERMISSION_CLASSES == ["rest_framework.permissions.AllowAny"]
    assert toolnexus_settings.AUTHENTICATION_CLASSES is None  # untouched keys keep defaults


def test_nested_sections_merge_key_by_key(settings: Any) -> None:
    settings.TOOLNEXUS = {
        "AGENT": {"name": "filing-desk"},
        "TOOLKIT": {"builtins": True, "disable_tools": ["x"]},
        "CLIENT": {"base_url": "http://llm/v1", "model": "m", "timeout_ms": 5000},
    }
    assert toolnexus_settings.AGENT == {**DEFAULTS["AGENT"], "name": "filing-desk"}
    assert toolnexus_settings.AGENT["version"] == "0.1.0"
    assert toolnexus_settings.TOOLKIT == {
        "skills_dir": None,
        "mcp_config": None,
        "builtins": True,
        "tools": [],
        "disable_tools": ["x"],  # extra create_toolkit keywords pass through
    }
    assert toolnexus_settings.CLIENT == {
        "base_url": "http://llm/v1",
        "style": "openai",  # from the defaults
        "model": "m",
        "api_key": None,
        "timeout_ms": 5000,
    }


def test_dotted_path_sections_replace_instead_of_merging(settings: Any) -> None:
    settings.TOOLNEXUS = {"CLIENT": "testproject.demo.offline_client", "TOOLKIT": "pkg.make"}
    assert toolnexus_settings.CLIENT == "testproject.demo.offline_client"
    assert toolnexus_settings.TOOLKIT == "pkg.make"
    assert toolnexus_settings.AGENT == DEFAULTS["AGENT"]


def test_merge_does_not_touch_its_input_or_the_defaults() -> None:
    user = {"AGENT": {"name": "x"}, "STORE": "django"}
    frozen = copy.deepcopy(user)
    merged = merge(user)
    merged["AGENT"]["description"] = "changed"
    merged["TOOLKIT"]["tools"].append("pkg.tool")
    merged["CLIENT"]["model"] = "changed"
    assert user == frozen
    assert merge({}) == DEFAULTS
    # (the autouse fixture also asserts DEFAULTS itself is pristine)


def test_mutating_a_read_value_does_not_leak_into_defaults(settings: Any) -> None:
    settings.TOOLNEXUS = {}
    toolnexus_settings.TOOLKIT["tools"].append("pkg.leaked_tool")
    toolnexus_settings.AGENT["name"] = "leaked"
    toolnexus_settings.reload()
    assert toolnexus_settings.TOOLKIT["tools"] == []
    assert toolnexus_settings.AGENT["name"] == "toolnexus-agent"


@pytest.mark.parametrize("name", ["NOPE", "store", "Store", "_private", "__wrapped__"])
def test_unknown_attribute_raises_attribute_error(name: str) -> None:
    with pytest.raises(AttributeError):
        getattr(toolnexus_settings, name)
    assert not hasattr(toolnexus_settings, name)
    assert getattr(toolnexus_settings, name, "fallback") == "fallback"


def test_override_is_seen_on_the_next_read(settings: Any) -> None:
    settings.TOOLNEXUS = {"STORE": "memory", "MAX_RUNS": 3}
    assert toolnexus_settings.STORE == "memory"  # now cached
    settings.TOOLNEXUS = {"STORE": "django", "MAX_RUNS": 5}
    assert toolnexus_settings.STORE == "django"
    assert toolnexus_settings.MAX_RUNS == 5

    with override_settings(TOOLNEXUS={"STORE": "file:/srv/tasks"}):
        assert toolnexus_settings.STORE == "file:/srv/tasks"
        assert toolnexus_settings.MAX_RUNS == 256
    # Leaving the override restores the previous value.
    assert toolnexus_settings.STORE == "django"
    assert toolnexus_settings.MAX_RUNS == 5


def test_reads_are_cached_until_a_reload(settings: Any) -> None:
    settings.TOOLNEXUS = {"AGENT": {"name": "one"}}
    first = toolnexus_settings.AGENT
    assert toolnexus_settings.AGENT is first  # the same merged dict: no re-merge per read
    toolnexus_settings.reload()
    assert toolnexus_settings.AGENT is not first
    assert toolnexus_settings.AGENT == first


@pytest.fixture
def hook_calls() -> Iterator[list[str]]:
    calls: list[str] = []

    def hook() -> None:
        calls.append("reloaded")

    toolnexus_settings.on_reload(hook)
    try:
        yield calls
    finally:
        toolnexus_settings._reload_hooks.remove(hook)


def test_reload_hooks_run_when_the_setting_changes(settings: Any, hook_calls: list[str]) -> None:
    settings.TOOLNEXUS = {"STORE": "memory"}
    assert hook_calls == ["reloaded"]
    settings.TOOLNEXUS = {"STORE": "django"}
    assert hook_calls == ["reloaded"] * 2
    toolnexus_settings.reload()
    assert hook_calls == ["reloaded"] * 3


def test_reload_hooks_run_when_tasks_change(settings: Any, hook_calls: list[str]) -> None:
    settings.TASKS = {"default": {"BACKEND": "django_tasks.backends.immediate.ImmediateBackend"}}
    assert hook_calls == ["reloaded"]


def test_unrelated_settings_do_not_reload(settings: Any, hook_calls: list[str]) -> None:
    settings.TOOLNEXUS = {"AGENT": {"name": "kept"}}
    agent = toolnexus_settings.AGENT
    hook_calls.clear()
    settings.DEBUG = not settings.DEBUG
    settings.TIME_ZONE = "Europe/Paris"
    assert hook_calls == []
    assert toolnexus_settings.AGENT is agent


def test_a_fresh_settings_object_reads_the_current_setting(settings: Any) -> None:
    settings.TOOLNEXUS = {"STORE": "django"}
    fresh = ToolnexusSettings()
    calls: list[int] = []
    fresh.on_reload(lambda: calls.append(1))
    assert fresh.STORE == "django"
    fresh.reload()
    assert calls == [1]


# -- sections, keys that moved, dotted paths ---------------------------------------------


@pytest.mark.parametrize("section", ["PUSH", "REVIEW", "MCP"])
def test_a_section_that_is_not_a_dict_reads_as_its_defaults(settings: Any, section: str) -> None:
    # Reported by its check (E600, E500, E700); reading a key must not crash on the way.
    settings.TOOLNEXUS = {section: "nonsense"}
    assert getattr(toolnexus_settings, section) == DEFAULTS[section]
    settings.TOOLNEXUS = {section: None}
    assert getattr(toolnexus_settings, section) == DEFAULTS[section]


def test_keys_that_moved_into_review_are_read_there(settings: Any) -> None:
    settings.TOOLNEXUS = {"REVIEW_NOTIFY_EMAILS": ["ops@x.example"], "REVIEW_BASE_URL": "https://x"}
    assert toolnexus_settings.REVIEW["NOTIFY_EMAILS"] == ["ops@x.example"]
    assert toolnexus_settings.REVIEW["BASE_URL"] == "https://x"
    assert toolnexus_settings.REVIEW["HOLD_SECONDS"] == 900.0  # the rest: defaults
    with pytest.raises(AttributeError):
        toolnexus_settings.REVIEW_NOTIFY_EMAILS  # noqa: B018
    # Written both ways, REVIEW's own key wins.
    settings.TOOLNEXUS = {
        "REVIEW_NOTIFY_EMAILS": ["old@x.example"],
        "REVIEW": {"NOTIFY_EMAILS": []},
    }
    assert toolnexus_settings.REVIEW["NOTIFY_EMAILS"] == []


def test_dotted_paths_are_imported_in_one_place_naming_the_setting() -> None:
    assert (
        setting_name("MCP", "PERMISSION_CLASSES", 0) == "TOOLNEXUS['MCP']['PERMISSION_CLASSES'][0]"
    )
    assert import_path("toolnexus_django.conf.merge", "X") is merge
    assert import_path(merge, "X") is merge  # an object is used as it is
    with pytest.raises(ImproperlyConfigured) as refused:
        import_path("no.such.thing", setting_name("CONVERSATIONS"))
    assert str(refused.value).startswith("TOOLNEXUS['CONVERSATIONS'] = 'no.such.thing' cannot be")
    assert isinstance(refused.value.__cause__, ImportError)


def test_imported_settings_import_each_entry_naming_it(settings: Any) -> None:
    settings.TOOLNEXUS = {"PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"]}
    assert toolnexus_settings.imported("PERMISSION_CLASSES") == [AllowAny]
    settings.TOOLNEXUS = {"MCP": {"PERMISSION_CLASSES": [IsAuthenticated, "no.such.Class"]}}
    with pytest.raises(ImproperlyConfigured, match=r"\['MCP'\]\['PERMISSION_CLASSES'\]\[1\]"):
        toolnexus_settings.imported("MCP", "PERMISSION_CLASSES")
    settings.TOOLNEXUS = {"EXTENDED_AGENT_CARD": None}
    assert toolnexus_settings.imported("EXTENDED_AGENT_CARD") is None

    class Card:
        def __call__(self, request: Any, card: dict[str, Any]) -> dict[str, Any]:
            return card

    hook = Card()  # an object is the object, every time (never a copy of it)
    settings.TOOLNEXUS = {"EXTENDED_AGENT_CARD": hook}
    assert toolnexus_settings.imported("EXTENDED_AGENT_CARD") is hook
    assert toolnexus_settings.imported("EXTENDED_AGENT_CARD") is hook
