"""Plug any of our stores into toolnexus's own ``Toolkit.serve``.

toolnexus defines its own async ``TaskStore`` ABC (``get``/``save`` are
coroutines); this adapter presents one of ours through it, so a plain toolnexus
server can persist its Tasks into a directory or the Django database::

    await toolkit.serve("127.0.0.1:0", client=client,
                        a2a={"store": as_toolnexus_store(DjangoTaskStore())})
"""

from __future__ import annotations

from typing import Any

import toolnexus

from .base import TaskStore
from .resolve import resolve_store


class ToolnexusStoreAdapter(toolnexus.TaskStore):
    def __init__(self, store: TaskStore) -> None:
        self.store = store

    async def get(self, id: str) -> dict[str, Any] | None:
        return await self.store.aget(id)

    async def save(self, task: dict[str, Any]) -> None:
        await self.store.asave(task)

    def __repr__(self) -> str:
        return f"<ToolnexusStoreAdapter {self.store!r}>"


def as_toolnexus_store(store: Any) -> ToolnexusStoreAdapter:
    """Wrap ``store`` — anything :func:`resolve_store` accepts — for toolnexus."""
    return ToolnexusStoreAdapter(resolve_store(store))
