"""Static files (the admin's CSS and scripts) served by the ASGI application,
for when nothing in front of the server serves them.

``toolnexus_serve`` turns this on so the admin is styled out of the box. A
file under ``STATIC_URL`` is looked up in ``STATIC_ROOT`` (what
``collectstatic`` gathered), else through the staticfiles finders (the apps'
``static/`` directories, as ``runserver`` does) — so it works before and
after ``collectstatic``. Which paths are static is the router's to say
(``serving.asgi.StaticFiles``): no other request enters this module. Answers
carry ``Content-Type``, ``Content-Length``, ``Last-Modified``, an ``ETag`` and
``Cache-Control``; ``If-None-Match`` and
``If-Modified-Since`` get 304; ``HEAD`` gets the headers only. Files are read
on a thread, and one at most 8 MB (larger ones are for a real static server).

In production a reverse proxy or a CDN in front should serve ``STATIC_ROOT``
itself (faster, and cached at the edge); this is what the app does when it
does not. Written here, not taken from ServeStatic or Starlette's
``StaticFiles``: under uvicorn each spends about 2.4x this handler's CPU per
file sent (benchmarks/RESULTS.md, benchmarks/static_files.py).
"""

from __future__ import annotations

import asyncio
import email.utils
import hashlib
import mimetypes
import os
import posixpath
from urllib.parse import unquote

from asgiref.typing import ASGISendCallable, HTTPScope
from django.conf import settings

MAX_BYTES = 8 * 1024 * 1024
#: Seconds a client may keep a file without asking again (an hour: files
#: without hashed names may change at the next deploy).
MAX_AGE = 3600


def static_prefix() -> str | None:
    """The path static files are served under, or None when this app should
    not serve them (staticfiles not installed, or STATIC_URL is another host)."""
    if "django.contrib.staticfiles" not in settings.INSTALLED_APPS:
        return None
    url = str(getattr(settings, "STATIC_URL", "") or "")
    if not url or "://" in url or url.startswith("//"):
        return None
    if not url.startswith("/"):
        url = "/" + url
    return url if url.endswith("/") else url + "/"


def find(relative: str) -> str | None:
    """The file ``relative`` names, from STATIC_ROOT or the finders; None if
    there is none (or it tries to leave them)."""
    normal = posixpath.normpath(unquote(relative)).lstrip("/")
    if not normal or normal.startswith("..") or "\x00" in normal:
        return None
    root = getattr(settings, "STATIC_ROOT", None)
    if root:
        candidate = os.path.realpath(os.path.join(root, normal))
        if candidate.startswith(os.path.realpath(root) + os.sep) and os.path.isfile(candidate):
            return candidate
    from django.contrib.staticfiles import finders

    found = finders.find(normal)
    if isinstance(found, list):
        found = found[0] if found else None
    return str(found) if found and os.path.isfile(found) else None


def _read(path: str) -> tuple[bytes, os.stat_result] | None:
    info = os.stat(path)
    if info.st_size > MAX_BYTES:
        return None
    with open(path, "rb") as f:
        return f.read(), info


async def serve_static(scope: HTTPScope, send: ASGISendCallable, relative: str) -> None:
    """Answer one GET/HEAD for the static file ``relative`` (below STATIC_URL)."""
    path = await asyncio.to_thread(find, relative)
    loaded = await asyncio.to_thread(_read, path) if path else None
    if loaded is None:
        await _plain(send, 404, b"Not Found")
        return
    body, info = loaded
    etag = '"' + hashlib.blake2s(body, digest_size=12).hexdigest() + '"'
    modified = email.utils.formatdate(info.st_mtime, usegmt=True)
    content_type = mimetypes.guess_type(path or "")[0] or "application/octet-stream"
    if content_type.startswith("text/") or content_type in ("application/javascript",):
        content_type += "; charset=utf-8"
    headers = [
        (b"content-type", content_type.encode()),
        (b"etag", etag.encode()),
        (b"last-modified", modified.encode()),
        (b"cache-control", f"public, max-age={MAX_AGE}".encode()),
    ]
    asked = {k.lower(): v for k, v in scope.get("headers") or ()}
    if _not_modified(asked, etag, info.st_mtime):
        await send(
            {"type": "http.response.start", "status": 304, "headers": headers, "trailers": False}
        )
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        return
    headers.append((b"content-length", str(len(body)).encode()))
    await send(
        {"type": "http.response.start", "status": 200, "headers": headers, "trailers": False}
    )
    content = b"" if scope["method"] == "HEAD" else body
    await send({"type": "http.response.body", "body": content, "more_body": False})


def _not_modified(asked: dict[bytes, bytes], etag: str, mtime: float) -> bool:
    match = asked.get(b"if-none-match")
    if match is not None:
        tags = [t.strip() for t in match.decode("latin-1").split(",")]
        return etag in tags or "*" in tags
    since = asked.get(b"if-modified-since")
    if since is not None:
        try:
            when = email.utils.parsedate_to_datetime(since.decode("latin-1")).timestamp()
        except (TypeError, ValueError):
            return False
        return int(mtime) <= when
    return False


async def _plain(send: ASGISendCallable, status: int, body: bytes) -> None:
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
    ]
    await send(
        {"type": "http.response.start", "status": status, "headers": headers, "trailers": False}
    )
    await send({"type": "http.response.body", "body": body, "more_body": False})


__all__ = ["find", "serve_static", "static_prefix"]
