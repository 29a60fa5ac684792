"""A django store that counts its reads of a Task (what a path costs the database)."""

from __future__ import annotations

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
