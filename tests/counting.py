"""What a path costs the database: a django store that counts its reads of a
Task, and every SQL statement any thread runs."""

from __future__ import annotations

from typing import Any

import pytest

from toolnexus_django.stores import DjangoTaskStore
from toolnexus_django.stores.base import Task


class CountingStore(DjangoTaskStore):
    """The django store, counting its reads of a Task."""

    def __init__(self) -> None:
        super().__init__()
        self.gets = 0

    def get(self, id: str) -> Task | None:
        self.gets += 1
        return super().get(id)


def record_statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every SQL statement any thread runs from now on (the endpoint's run on
    its database threads, whose connections are not the test's, so Django's
    ``CaptureQueriesContext`` would not see them)."""
    from django.db.backends.utils import CursorWrapper

    ran: list[str] = []
    real = CursorWrapper.execute

    def execute(self: Any, sql: str, params: Any = None) -> Any:
        ran.append(sql)
        return real(self, sql, params)

    monkeypatch.setattr(CursorWrapper, "execute", execute)
    return ran


def record_hops(monkeypatch: pytest.MonkeyPatch, *modules: Any) -> list[str]:
    """The name of every function ``modules`` hand to a database thread from
    now on (their ``run_sync``, counted)."""
    from toolnexus_django.runtime import dbthreads

    handed: list[str] = []
    real = dbthreads.run_sync

    async def counting(fn: Any, *args: Any) -> Any:
        handed.append(getattr(fn, "__name__", repr(fn)))
        return await real(fn, *args)

    for module in modules:
        monkeypatch.setattr(module, "run_sync", counting)
    return handed
