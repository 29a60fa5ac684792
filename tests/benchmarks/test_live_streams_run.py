"""benchmarks/live_streams.py runs as shipped, at a tiny size, so it cannot rot:
every streamed run's answer is assembled from its chunks with no character
lost or doubled, across a reconnect too, and live updates off show none.
Correctness only: no timing is asserted."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.servers import ROOT

pytestmark = pytest.mark.slow


def test_live_streams_runs_and_every_answer_arrives_whole() -> None:
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    done = subprocess.run(
        [sys.executable, "benchmarks/live_streams.py", "--latency-runs", "2",
         "--latency-tokens", "8", "--runs", "4", "--tokens", "12", "--rate", "20",
         "--warmup", "1", "--deadline", "30", "--json"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["failures"] == 0
    sqlite = result["databases"]["sqlite"]
    for phase in ("same", "across", "on", "off"):
        assert sqlite[phase]["failures"] == 0, sqlite[phase]["failure_examples"]
        assert sqlite[phase]["failed_runs"] == 0
        assert sqlite[phase]["hung"] == sqlite[phase]["completed_with_a_wrong_answer"] == 0
        assert sqlite[phase]["chunks_not_a_prefix"] == 0
    assert (sqlite["same"]["runs"], sqlite["same"]["n"]) == (2, 2)
    assert sqlite["same"]["chunks_per_task"] > 0
    # Read on A after the run began on B: the chunks came from the database.
    across = sqlite["across"]
    assert (across["runs"], across["n"]) == (2, 2) and across["chunks_per_task"] > 0
    assert across["reconnects_done"] == across["reconnects_planned"] == 2
    on, off = sqlite["on"], sqlite["off"]
    assert on["runs"] == off["runs"] == 4
    assert on["reconnects_done"] == on["reconnects_planned"] == 2
    assert off["reconnects_done"] == off["reconnects_planned"] == 2
    assert on["chunks_per_task"] > 0 and on["chunks_min"] > 0
    assert off["chunks_per_task"] == 0 and off["chunks_max"] == 0
    assert (on["model_calls_streamed"], off["model_calls_streamed"]) == (4, 0)
    assert set(sqlite["exits"].values()) == {0}
