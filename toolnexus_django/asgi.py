"""The project's ASGI application, where projects name it (``asgi.py``:
``from toolnexus_django.asgi import get_asgi_application``). It lives in
:mod:`toolnexus_django.serving.asgi`; this module keeps the documented path."""

from .serving.asgi import AgentApplication, get_asgi_application

__all__ = ["AgentApplication", "get_asgi_application"]
