"""The ASGI applications benchmarks/static_files.py puts under ``toolnexus_serve
--no-static``: the project (``toolnexus_django.asgi``) behind another static-file
server. ``benchmarks/static_settings.py`` names one as ``ASGI_APPLICATION``;
each is built when first looked up (after Django is set up, in the master before
it forks), like an ``asgi.py``'s ``application``.

- ``servestatic_root``: ServeStatic's ASGI class over ``STATIC_ROOT`` (scanned once,
  as WhiteNoise does).
- ``servestatic_finders``: the same over the files the staticfiles finders list (the
  apps' ``static/`` directories), as ServeStatic's Django middleware adds them.
- ``starlette_root``: Starlette's ``StaticFiles`` mounted at ``STATIC_URL`` over
  ``STATIC_ROOT``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings

from toolnexus_django.asgi import get_asgi_application
from toolnexus_django.serving.staticfiles import MAX_AGE, static_prefix


def _prefix() -> str:
    prefix = static_prefix()
    assert prefix, "STATIC_URL must be a path on this host"
    return prefix


def _servestatic_root() -> Any:
    from servestatic import ServeStaticASGI

    return ServeStaticASGI(
        get_asgi_application(), root=settings.STATIC_ROOT, prefix=_prefix(), max_age=MAX_AGE
    )


def _servestatic_finders() -> Any:
    from django.contrib.staticfiles import finders
    from servestatic import ServeStaticASGI

    app = ServeStaticASGI(get_asgi_application(), max_age=MAX_AGE)
    for finder in finders.get_finders():
        for path, storage in finder.list(None):
            url = _prefix() + path.replace("\\", "/")
            if url not in app.files:  # the first finder's file wins, as finders.find
                app.add_file_to_dictionary(url, storage.path(path), root=storage.location)
    return app


def _starlette_root() -> Any:
    from starlette.routing import Mount, Router
    from starlette.staticfiles import StaticFiles

    return Router(
        routes=[
            Mount(_prefix().rstrip("/"), app=StaticFiles(directory=settings.STATIC_ROOT)),
            Mount("/", app=get_asgi_application()),
        ]
    )


APPS: dict[str, Callable[[], Any]] = {
    "servestatic_root": _servestatic_root,
    "servestatic_finders": _servestatic_finders,
    "starlette_root": _starlette_root,
}
_built: dict[str, Any] = {}


def __getattr__(name: str) -> Any:
    if name not in APPS:
        raise AttributeError(name)
    if name not in _built:
        _built[name] = APPS[name]()
    return _built[name]
