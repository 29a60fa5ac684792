"""Settings for benchmarks/tool_connections.py and tests/project_tools/test_tool_connections.py:
the test project whose toolkit is the ORM tools of ``benchmarks/orm_tools.py``.

TOOLNEXUS_TOOL_THREADS   TOOL_THREADS (unset: the default)
TOOLNEXUS_BENCH_DB_POOL  N: Django's psycopg pool (``OPTIONS["pool"]``), at most N per process
"""

from __future__ import annotations

import os

# Imported here only for its tool names: it loads no model.
from benchmarks.orm_tools import TOOLS
from testproject.settings import *  # noqa: F403
from testproject.settings import DATABASES, TOOLNEXUS

TOOLNEXUS = {
    **TOOLNEXUS,
    "TOOLKIT": {**TOOLNEXUS["TOOLKIT"], "tools": [f"benchmarks.orm_tools.{t}" for t in TOOLS]},
}
if os.environ.get("TOOLNEXUS_TOOL_THREADS"):
    TOOLNEXUS["TOOL_THREADS"] = int(os.environ["TOOLNEXUS_TOOL_THREADS"])

if os.environ.get("TOOLNEXUS_BENCH_DB_POOL"):
    _size = int(os.environ["TOOLNEXUS_BENCH_DB_POOL"])
    DATABASES["default"]["CONN_MAX_AGE"] = 0  # the pool keeps them instead
    DATABASES["default"]["OPTIONS"] = {
        **DATABASES["default"].get("OPTIONS", {}),
        "pool": {"min_size": 0, "max_size": _size, "timeout": 120},
    }
