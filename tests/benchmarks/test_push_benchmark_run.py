"""benchmarks/push_delivery.py runs as shipped, at a tiny size, so it cannot rot:
every Task's notifications arrive, none twice."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.servers import ROOT

pytestmark = pytest.mark.slow


def test_push_delivery_benchmark_loses_nothing_on_sqlite() -> None:
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    done = subprocess.run(
        [sys.executable, "benchmarks/push_delivery.py", "--rate", "5", "--seconds", "2",
         "--drain", "20", "--grace", "0.5", "--json"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=90,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["tasks_sent"] == 10, result["send_failures"]
    assert result["lost"] == {"working": 0, "artifact": 0, "completed": 0}, result["lost_tasks"]
    assert result["duplicates"] == 0, result["duplicate_examples"]
    assert result["tasks_out_of_order"] == 0
    assert result["by_kind"] == {"working": 10, "artifact": 10, "completed": 10}
    assert result["latency"]["all"]["n"] == 30
    assert result["server_exit"] == 0
