"""benchmarks/tck.py: how it reads the TCK's report and triages each failure, that
docs/reference/wire.md lists every failure it knows, and (with the TCK checked out,
TOOLNEXUS_TCK_DIR) the TCK run against the demo leaves no failure untriaged."""

from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from tests.servers import ROOT

#: The script's namespace, loaded as it is shipped (benchmarks/ is not a package).
TCK = runpy.run_path(str(ROOT / "benchmarks" / "tck.py"))

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
<testcase classname="tests.compatibility.agent_card.test_agent_card.TestAgentCardDiscovery"
  name="test_agent_card_retrievable"/>
<testcase classname="tests.compatibility.core_operations.test_artifacts.TestTextArtifact"
  name="test_task_has_text_artifact[http_json]">
  <failure message="AssertionError: DM-ART-001 failed&#10;second line">trace</failure></testcase>
<testcase classname="tests.compatibility.core_operations.test_requirements"
  name="test_must_requirement[CORE-SEND-003-jsonrpc]">
  <failure message="AssertionError: CORE-SEND-003">trace</failure></testcase>
<testcase classname="tests.compatibility.jsonrpc.test_error_codes.TestJsonRpcErrorCodeMappings"
  name="test_a_check_nobody_triaged"><failure message="AssertionError: new">t</failure></testcase>
<testcase classname="tests.compatibility.core_operations.test_data_model.TestIgnore"
  name="test_extra_fields_ignored_rest"><skipped type="pytest.xfail" message="DM-SERIAL-005"/>
</testcase>
<testcase classname="tests.compatibility.grpc.test_streaming.TestGrpcStreaming"
  name="test_stream"><skipped type="pytest.skip" message="Transport 'grpc' not configured"/>
</testcase>
</testsuite></testsuites>
"""


def test_a_report_is_read_into_cases_by_category_and_transport(tmp_path: Path) -> None:
    report = tmp_path / "junit.xml"
    report.write_text(JUNIT)
    cases = TCK["read_junit"](report)
    assert [(c.test_id, c.category, c.transport, c.outcome) for c in cases] == [
        (
            "agent_card/test_agent_card.py::TestAgentCardDiscovery::test_agent_card_retrievable",
            "agent_card", "-", "passed",
        ),
        (
            "core_operations/test_artifacts.py::TestTextArtifact::test_task_has_text_artifact[http_json]",
            "core_operations", "http_json", "failed",
        ),
        (
            "core_operations/test_requirements.py::test_must_requirement[CORE-SEND-003-jsonrpc]",
            "core_operations", "jsonrpc", "failed",
        ),
        (
            "jsonrpc/test_error_codes.py::TestJsonRpcErrorCodeMappings::test_a_check_nobody_triaged",
            "jsonrpc", "jsonrpc", "failed",
        ),
        (
            "core_operations/test_data_model.py::TestIgnore::test_extra_fields_ignored_rest",
            "core_operations", "-", "xfailed",
        ),
        ("grpc/test_streaming.py::TestGrpcStreaming::test_stream", "grpc", "grpc", "skipped"),
    ]  # fmt: skip
    assert cases[1].message == "AssertionError: DM-ART-001 failed"  # the first line only
    verdicts = [c.triage()[0] for c in cases if c.outcome == "failed"]
    assert verdicts == ["tck", "tck", "NEW"]
    table = TCK["summary"](cases)
    assert "| core_operations | http_json | 0 | 1 | 0 | 0 |" in table
    assert table[-1] == "| all |  | 1 | 3 | 1 | 1 |"


def test_every_triaged_failure_is_listed_in_the_protocol_docs() -> None:
    docs = (ROOT / "docs" / "reference" / "wire.md").read_text()
    section = docs.split("## The A2A TCK", 1)[1].split("\n## ", 1)[0]
    missing = [name for name in TCK["TRIAGE"] if name.rstrip("[:") not in section]
    assert not missing, f"docs/reference/wire.md's TCK section does not list {missing}"


@pytest.mark.slow
def test_the_tck_leaves_no_untriaged_failure_on_the_demo(tmp_path: Path) -> None:
    tck_dir = os.environ.get("TOOLNEXUS_TCK_DIR", "")
    if not tck_dir or not (Path(tck_dir) / "tests" / "compatibility").is_dir():
        pytest.skip("the A2A TCK is not checked out (set TOOLNEXUS_TCK_DIR)")
    out = tmp_path / "tck.json"
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    done = subprocess.run(
        [sys.executable, "benchmarks/tck.py", "--grpc", "--json", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    cases = [TCK["Case"](**c) for c in json.loads(out.read_text())["cases"]]
    untriaged = [c.test_id for c in cases if c.outcome == "failed" and c.triage()[0] == "NEW"]
    assert not untriaged, done.stdout
    for transport in ("jsonrpc", "http_json", "grpc"):
        passed = [c for c in cases if c.transport == transport and c.outcome == "passed"]
        assert len(passed) >= 20, f"{transport}: only {len(passed)} TCK tests passed"
