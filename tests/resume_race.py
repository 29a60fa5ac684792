"""Run as a subprocess by the tests: resume one answered Task when told to,
as a Django Tasks worker does (``run_resume``).

    python -m tests.resume_race <task_id>

Prints "ready" once Django and the agent runtime are up, waits for a line on
stdin (the test sends one to every racer at once), then prints the state the
Task was in when this process's attempt ended.
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.served_settings")
    import django

    django.setup()
    from toolnexus_django.agent.runtime import get_runtime, shutdown_runtime
    from toolnexus_django.fulfilment.runner import run_resume

    task_id = sys.argv[1]
    get_runtime()  # started before the line-up: the racers differ only in luck
    print("ready", flush=True)
    sys.stdin.readline()
    print(run_resume(task_id), flush=True)
    shutdown_runtime(timeout=10)
