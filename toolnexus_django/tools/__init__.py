"""Tools that act on the project's data as the person who asked.

:func:`tool` makes a toolnexus native tool with Django's permissions,
transactions and a person's approval; :func:`current_run` tells any tool
call whose run it belongs to; every tool call stays within the process's
database connection budget (:mod:`.budget`).
"""

from .approval import Approval
from .context import RunContext, current_run
from .decorator import DjangoTool, budgeted, tool

__all__ = ["Approval", "DjangoTool", "RunContext", "budgeted", "current_run", "tool"]
