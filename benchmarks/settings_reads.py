"""What reading the endpoint's DRF classes costs per request.

Every request of the A2A endpoint (and the card, and MCP) reads
``rpc_authentication_classes()`` and ``rpc_permission_classes()``: the
setting's dotted paths, imported once and cached. This times both reads with
the testproject's settings, best of 5 x N calls. Compare two trees by putting
each first on the path (benchmarks/RESULTS.md has the commands)::

    PYTHONPATH=<tree> .venv/bin/python benchmarks/settings_reads.py
"""

from __future__ import annotations

import os
import sys
import timeit

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "testproject.settings")

import django

django.setup()

from toolnexus_django.serving.wsgi import (  # noqa: E402
    rpc_authentication_classes,
    rpc_permission_classes,
)

N = 200_000


def both() -> None:
    rpc_authentication_classes()
    rpc_permission_classes()


def main() -> None:
    both()  # imported once, before the clock
    best = min(timeit.repeat(both, number=N, repeat=5))
    print(f"{sys.modules['toolnexus_django'].__file__}: {best / N * 1e6:.3f} µs per request")


if __name__ == "__main__":
    main()
