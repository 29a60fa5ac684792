"""The benchmarks run as shipped: each at a tiny size, so none can rot."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.servers import ROOT

pytestmark = pytest.mark.slow


def run(*args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL",)}
    done = subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_indexes_runs_on_sqlite() -> None:
    out = run("benchmarks/indexes.py", "--rows", "300", "--repeats", "3")
    assert "store.save (upsert)" in out and "plans:" in out
    assert "dashboard: tokens per owner + day" in out  # the admin dashboard's charts


def test_tracing_cost_measures_a_gettask_on_and_off() -> None:
    # One provider (each is a process of its own, set up like this one): every span recorded.
    out = run("benchmarks/tracing_cost.py", "--rounds", "1", "--calls", "20", "--provider", "all")
    assert out.startswith("| all | "), out


@pytest.mark.django_db
def test_indexes_runs_on_postgresql() -> None:
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("this run's database is sqlite")
    name = f"tnx_idx_{os.getpid()}"
    out = run("benchmarks/indexes.py", "--rows", "300", "--repeats", "3", "--postgres",
              "--pg-database", name)  # fmt: skip
    assert "Index Scan" in out or "Seq Scan" in out


def test_mcp_calls_runs_beside_toolnexus_own_server() -> None:
    import shutil

    if shutil.which("wrk") is None:
        pytest.skip("needs wrk (apt-get install wrk)")
    out = run("benchmarks/mcp_calls.py", "--seconds", "1", "--rounds", "1")
    assert "toolnexus_serve (this app)" in out and "toolnexus Toolkit.serve" in out


def test_model_answer_rss_runs_and_the_bound_refuses_the_answer() -> None:
    import json

    out = json.loads(run("benchmarks/model_answer_rss.py", "--mb", "5", "--settle", "0"))
    assert (out["state"], out["message"]) == (
        "failed",
        "The model's answer was larger than 4194304 bytes",
    )
    assert out["peak_mb"] >= out["rss_before_mb"] > 0


def test_header_flood_runs_and_every_connection_gets_its_431() -> None:
    out = run("benchmarks/header_flood.py", "--connections", "5", "--header-mb", "0.5",
              "--hold", "10")  # fmt: skip
    assert "5 431, then closed" in out and "still answers: True" in out


def test_tool_connections_runs_on_a_throwaway_cluster() -> None:
    from tests.pgcluster import unavailable

    if (why := unavailable()) is not None:
        pytest.skip(why)
    out = run("benchmarks/tool_connections.py", "--runs", "6", "--work", "0", "--repeat", "1",
              "--configs", "t2", "--tools", "orm_sync", "dj_orm_async")  # fmt: skip
    assert "| t2 | orm_sync | 6 / 0 |" in out and "| t2 | dj_orm_async | 6 / 0 |" in out


def test_static_files_runs_each_server_it_compares() -> None:
    import importlib.util
    import shutil

    if shutil.which("wrk") is None:
        pytest.skip("needs wrk (apt-get install wrk)")
    # ServeStatic is no dependency of the app (RESULTS.md: measured, not adopted).
    other = "ServeStatic, finders" if importlib.util.find_spec("servestatic") else "Starlette"
    out = run("benchmarks/static_files.py", "--rounds", "1", "--duration", "1", "--warmup", "1",
              "--only", "app handler, STATIC_ROOT", other)  # fmt: skip
    rows = [line for line in out.splitlines() if line.startswith("| ")][1:]  # not the head
    assert len(rows) == 6 and "| app handler, STATIC_ROOT | base.css 304 |" in out
    assert all(row.endswith("| 0 |") for row in rows)  # every answer a 200 (or the 304)


def test_module_paths_counts_each_path_on_a_served_worker() -> None:
    out = run("benchmarks/module_paths.py", "--list")
    rows = [line.split(" | ") for line in out.splitlines() if line.startswith("| ")][1:]
    counts = {row[0].removeprefix("| ").split(",")[0]: int(row[1]) for row in rows}
    assert list(counts) == [
        "blocking v1.0 SendMessage",
        "GetTask (v1.0) of a completed Task",
        "admin approval to the resumed run completing the Task",
    ], out
    # A blocking send crosses what a GetTask does and the run besides.
    assert 0 < counts["GetTask (v1.0) of a completed Task"] < counts["blocking v1.0 SendMessage"]
    # --list names them, one line each, after the path's head.
    listed = out.split("\nget: ", 1)[1].split("\n\n", 1)[0].splitlines()
    assert listed[0].startswith(f"{counts['GetTask (v1.0) of a completed Task']} modules"), out
    assert len(listed) == 1 + counts["GetTask (v1.0) of a completed Task"], out


def test_versus_sdk_runs_its_grpc_workloads_on_the_sdk_and_on_ours() -> None:
    import ast

    sdk_python = Path(os.environ.get("SDK_VENV", "/tmp/tnx-sdk-venv")) / "bin" / "python"
    # (.ci/run builds that venv; on a developer's machine it may not exist yet.)
    if not sdk_python.exists() or subprocess.run(
        [str(sdk_python), "-c", "import grpc, a2a"], capture_output=True
    ).returncode:
        pytest.skip("needs the SDK's venv with a2a-sdk[grpc]: bash benchmarks/sdk_venv.sh")
    out = run("benchmarks/versus_sdk.py", "--only", "grpc_gettask", "grpc_e2e",
              "--servers", "sdk memory", "toolnexus sqlite",
              "--grpc-seconds", "1", "--grpc-warmup", "0", "--grpc-callers", "2")  # fmt: skip
    rows = {}
    for line in out.splitlines():
        if line.startswith("grpc_"):
            workload = line.split()[0]
        elif line.startswith("  ") and "{" in line:
            name, result = line.strip().split("  ", 1)
            rows[(workload, name)] = ast.literal_eval(result.strip())
    assert sorted(rows) == [
        ("grpc_e2e", "sdk memory"), ("grpc_e2e", "toolnexus sqlite"),
        ("grpc_gettask", "sdk memory"), ("grpc_gettask", "toolnexus sqlite"),
    ], out  # fmt: skip
    for (workload, name), result in rows.items():
        rate = result["reqs_per_s" if workload == "grpc_gettask" else "tasks_per_s"]
        assert rate > 0 and result["failures"] == {}, (workload, name, result)
        assert result["cpu_ms_per_req" if workload == "grpc_gettask" else "cpu_ms_per_task"] > 0
    assert "exit codes on SIGTERM: {'sdk memory': 0, 'toolnexus sqlite': 0}" in out


def test_wakeups_runs_both_modes_across_instances_and_idle() -> None:
    import psycopg

    admin = "postgres://postgres@127.0.0.1:5432/postgres"
    try:
        psycopg.connect(admin, connect_timeout=3).close()
    except psycopg.Error as exc:
        pytest.skip(f"needs the PostgreSQL at 127.0.0.1:5432 (user postgres): {exc}")
    out = run("benchmarks/wakeups.py", "--instances", "2", "--moves", "20", "--rate", "200",
              "--idle-streams", "20", "--window", "1", "--baseline-window", "0",
              "--settle", "0.5", "--threads", "4", "--pg-admin", admin,
              "--database", f"tnx_wakeups_{os.getpid()}")  # fmt: skip
    table = [line for line in out.splitlines() if line.startswith(("| notify", "| poll"))]
    rows = [line.split(" | ") for line in table]
    moved = {row[0][2:]: row for row in rows if len(row) == 13}
    idle = {row[0][2:]: row for row in rows if len(row) == 9}
    assert sorted(moved) == sorted(idle) == ["notify", "poll"], out
    for row in moved.values():  # every CancelTask on one instance reached its stream on the other
        assert row[2].startswith("20 (") and row[3] == "20", out
    for row in idle.values():  # 20 streams open through the window, none woken
        assert row[2] == row[6] == "20", out
    exits = out.split("exit codes on SIGTERM: ", 1)[1].splitlines()[0]
    assert exits.count(": 0") == 8 and "None" not in exits, out  # 2 phases x 3, and 2 idle
