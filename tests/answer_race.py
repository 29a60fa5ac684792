"""Run as a subprocess by the tests: answer one Task at a given moment.

    python -m tests.answer_race <task_id> <request_id> <start_at_epoch> <actor>

Prints "won" or the refusal reason, then lets its own background resume (if
it won) finish before exiting.
"""

from __future__ import annotations

import os
import sys
import time

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "testproject.settings")
    import django

    django.setup()
    from toolnexus import Answer

    from toolnexus_django.fulfilment.runs import close_runs
    from toolnexus_django.review import AnswerRefused, answer_task

    task_id, request_id, start_at, actor = sys.argv[1:5]
    time.sleep(max(0.0, float(start_at) - time.time()))  # line up with the other racers
    try:
        answer_task(task_id, Answer(id=request_id, ok=True), decision="approve", actor=actor)
        print("won", flush=True)
    except AnswerRefused as refused:
        print(refused.reason, flush=True)
    close_runs(timeout=30)
