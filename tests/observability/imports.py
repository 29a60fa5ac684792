"""What the app's own code imports of an optional library, in a fresh process
of the demo project: the check behind "off, the app never imports
opentelemetry" (TRACING) and "... prometheus_client" (METRICS).

:func:`imported_by_the_app` runs a test's script after :data:`WATCH`, which
sets up the watch, Django and a test client; the script serves what it must
and prints, as its last line, JSON of what ``ours`` held when it looked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from tests.servers import ROOT, database_url

#: Run first, with ``PREFIX`` set: each import of a ``PREFIX...`` module made
#: by the app's own code (a module named ``toolnexus_django...``) goes into
#: ``ours`` — another library (redis, django_rq) may import it itself. Then
#: Django's set-up, a test ``client``, a user's ``MESSAGE`` and
#: ``call(method, params)``, one JSON-RPC request to the endpoint.
WATCH = """
import builtins, json
ours = set()
imports = builtins.__import__

def watched(name, globals=None, locals=None, fromlist=(), level=0):
    importer = (globals or {}).get("__name__") or ""
    if name.startswith(PREFIX) and importer.startswith("toolnexus_django"):
        ours.add(name)
    return imports(name, globals, locals, fromlist, level)

builtins.__import__ = watched
import django
django.setup()
from django.test import Client
client = Client()
MESSAGE = {"messageId": "m1", "role": "user", "parts": [{"kind": "text", "text": "hi"}]}

def call(method, params):
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return client.post("/agent/", json.dumps(body), content_type="application/json")
"""


def imported_by_the_app(prefix: str, script: str) -> Any:
    """Run ``script`` in a fresh process of the demo project (the test
    database, the django store, the in-process demo model) after
    :data:`WATCH` for ``prefix``; what its last line printed, parsed."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "testproject.settings",
        "DATABASE_URL": database_url(),
        "TOOLNEXUS_STORE": "django",
    }
    env.pop("LLM_BASE_URL", None)  # the in-process demo model answers
    for knob in ("TOOLNEXUS_TRACING", "TOOLNEXUS_METRICS_TOKEN"):  # the demo's: both off
        env.pop(knob, None)
    code = f"PREFIX = {prefix!r}\n{WATCH}\n{script}"
    ran = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-2000:]
    return json.loads(ran.stdout.strip().splitlines()[-1])
