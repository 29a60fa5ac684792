"""testproject's settings, with the static-file benchmark's two knobs
(benchmarks/static_files.py sets them in the server's environment)."""

import os

from testproject.settings import *  # noqa: F403

#: A dotted path into benchmarks/static_apps.py, or unset: the app's own handler.
ASGI_APPLICATION = os.environ.get("BENCH_ASGI_APPLICATION") or None
#: Where collectstatic put the files (an empty directory: the finders serve).
STATIC_ROOT = os.environ["BENCH_STATIC_ROOT"]
