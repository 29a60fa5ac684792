"""The docs site's generated reference pages cover the code: every key of
``conf.DEFAULTS`` (a section's keys too) has its meaning written down, every
check id the code raises is listed, and each page's marker is there to fill.
No Sphinx needed: these call the generator (docs/_ext/toolnexus_reference.py)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

from tests.checks.test_check_ids import id_literals
from toolnexus_django.checks import PROBLEMS, RETIRED_IDS
from toolnexus_django.conf import DEFAULTS
from toolnexus_django.conf_docs import DOCS

ROOT = Path(__file__).resolve().parents[2]
DOCS_DIR = ROOT / "docs"


def load_generator() -> ModuleType:
    path = DOCS_DIR / "_ext" / "toolnexus_reference.py"
    spec = importlib.util.spec_from_file_location("toolnexus_reference", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ref = load_generator()


def test_every_setting_has_its_meaning_written_down() -> None:
    assert ref.undocumented() == [], (
        "add what these keys mean to toolnexus_django/conf_docs.py (DOCS)"
    )
    assert ref.unknown_docs() == [], "conf_docs.DOCS names keys DEFAULTS does not have"


def test_the_keys_are_the_top_level_keys_and_each_sections_keys() -> None:
    keys = ref.setting_keys()
    assert set(DEFAULTS) <= set(keys)
    assert {"REVIEW.HOLD_SECONDS", "PUSH.SIGNING_KEY", "MCP.tools", "GRPC.URL"} <= set(keys)
    assert len(keys) == len(set(keys)) == len(DOCS)


def test_a_new_key_without_its_meaning_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(DEFAULTS, "NEW_KEY", 1)
    monkeypatch.setitem(DEFAULTS, "PUSH", {**DEFAULTS["PUSH"], "NEW_PUSH_KEY": 2})
    assert sorted(ref.undocumented()) == ["NEW_KEY", "PUSH.NEW_PUSH_KEY"]


def test_the_settings_page_shows_each_key_its_default_and_its_meaning() -> None:
    page = ref.settings_markdown()
    for key, default in DEFAULTS.items():
        assert f"### `{key}`" in page
        if not isinstance(default, dict):
            assert f"Default: `{default!r}`" in page
    assert "#### `REVIEW['HOLD_SECONDS']`" in page
    assert "Default: `900.0`" in page
    assert DOCS["REVIEW.HOLD_SECONDS"] in page
    labels = re.findall(r"^\((setting-[a-z0-9-]+)\)=$", page, re.MULTILINE)
    assert len(labels) == len(set(labels)) == len(DOCS)


def test_the_checks_page_lists_every_id_the_code_raises_and_every_retired_one() -> None:
    page = ref.checks_markdown()
    listed = re.findall(r"^\| `toolnexus_django\.([EW]\d{3})` \|", page, re.MULTILINE)
    assert len(listed) == len(set(listed))
    assert set(id_literals()) <= set(listed)
    assert set(listed) == set(PROBLEMS) | set(RETIRED_IDS)
    for code, problem in PROBLEMS.items():
        assert f"| `toolnexus_django.{code}` | " in page and problem.replace("|", "\\|") in page


def test_the_checks_page_maps_each_retired_id_to_the_ids_it_became() -> None:
    page = ref.checks_markdown()
    for old, news in RETIRED_IDS.items():
        start = f"| `toolnexus_django.{old}`"
        (row,) = [line for line in page.splitlines() if line.startswith(start)]
        assert re.findall(r"`([EW]\d{3})`", row.split("|")[2]) == list(news)


def test_the_commands_page_shows_each_commands_options() -> None:
    page = ref.commands_markdown()
    for name in ref.COMMANDS:
        assert f"## `{name}`" in page
    assert "--older-than" in page and "--loop" in page and "--grace" in page


@pytest.mark.parametrize(
    ("page", "marker"),
    [
        ("reference/settings.md", "SETTINGS_MARKER"),
        ("reference/checks.md", "CHECKS_MARKER"),
        ("reference/commands.md", "COMMANDS_MARKER"),
    ],
)
def test_each_generated_page_holds_its_marker_on_a_line_of_its_own(page: str, marker: str) -> None:
    text = (DOCS_DIR / page).read_text()
    assert getattr(ref, marker) in text.splitlines()
    assert getattr(ref, marker) not in ref.fill(text)
