"""Tools that use the ORM, for benchmarks/tool_connections.py and
tests/project_tools/test_tool_connections.py: each counts the users, writes a row, then
works ``TOOLNEXUS_BENCH_WORK`` seconds (default 1) without the database, as
a tool that calls another service does. The same two bodies (sync and
async) are served as plain ``toolnexus.tool`` tools and, where the checkout
has it, as ``toolnexus_django.tool`` tools."""

from __future__ import annotations

import asyncio
import os
import time
import uuid

import toolnexus

WORK = float(os.environ.get("TOOLNEXUS_BENCH_WORK", "1"))


def _name(n: int) -> str:
    return f"tool-call-{n}-{uuid.uuid4().hex[:8]}"


def count_and_write(n: int) -> str:
    """Count the users, write a group, then work without the database."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    users = get_user_model().objects.count()
    group = Group.objects.create(name=_name(n))
    time.sleep(WORK)
    return f"ok {n}: {users} users, wrote group {group.pk}"


async def acount_and_write(n: int) -> str:
    """Count the users, write a group (async ORM), then work without the database."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    users = await get_user_model().objects.acount()
    group = await Group.objects.acreate(name=_name(n))
    await asyncio.sleep(WORK)
    return f"ok {n}: {users} users, wrote group {group.pk}"


orm_sync = toolnexus.tool(name="orm_sync")(count_and_write)
orm_async = toolnexus.tool(name="orm_async")(acount_and_write)

#: The tools of this checkout, by name (main before issue 19 has no toolnexus_django.tool).
TOOLS = ["orm_sync", "orm_async"]
try:
    from toolnexus_django import tool
except ImportError:
    pass
else:
    dj_orm_sync = tool(name="dj_orm_sync")(count_and_write)
    dj_orm_async = tool(name="dj_orm_async")(acount_and_write)
    TOOLS += ["dj_orm_sync", "dj_orm_async"]
