"""toolnexus-django: a Django project as an A2A agent server powered by toolnexus.

What a project's tools use: ``toolnexus_django.tool`` (a toolnexus native
tool with Django's permissions, transactions and a person's approval) and
``toolnexus_django.current_run()`` (whose run a tool call belongs to).
Importing the package loads no model: it is safe in settings and INSTALLED_APPS.
"""

from .tools import Approval, DjangoTool, RunContext, current_run, tool

__version__ = "0.1.0"

__all__ = ["Approval", "DjangoTool", "RunContext", "current_run", "tool"]
