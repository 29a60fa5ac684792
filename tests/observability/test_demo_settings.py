"""The demo project switches traces and metrics on from its environment
(docs/reference/demo.md): ``TOOLNEXUS_TRACING=1`` and
``TOOLNEXUS_METRICS_TOKEN=<secret>``; unset, both stay off."""

from __future__ import annotations

import runpy
from typing import Any

import pytest

from tests.servers import ROOT

SETTINGS = ROOT / "testproject" / "settings.py"


def demo_toolnexus(monkeypatch: pytest.MonkeyPatch, **env: str) -> dict[str, Any]:
    """testproject/settings.py's TOOLNEXUS as the module makes it with ``env``
    (run afresh from its file: the settings in use are left as they are)."""
    for name in ("TOOLNEXUS_TRACING", "TOOLNEXUS_METRICS_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    toolnexus: dict[str, Any] = runpy.run_path(str(SETTINGS))["TOOLNEXUS"]
    return toolnexus


def test_the_demo_reads_its_tracing_and_metrics_knobs(monkeypatch: pytest.MonkeyPatch) -> None:
    on = demo_toolnexus(monkeypatch, TOOLNEXUS_TRACING="1", TOOLNEXUS_METRICS_TOKEN="s3cret")
    assert on["TRACING"] is True
    assert on["METRICS"] == {"TOKEN": "s3cret"}


def test_unset_or_not_1_the_demo_neither_traces_nor_serves_metrics(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    off = demo_toolnexus(monkeypatch)
    assert "TRACING" not in off and "METRICS" not in off  # the app's defaults: off
    assert "TRACING" not in demo_toolnexus(monkeypatch, TOOLNEXUS_TRACING="0")
    assert "METRICS" not in demo_toolnexus(monkeypatch, TOOLNEXUS_METRICS_TOKEN="")
