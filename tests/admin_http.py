"""A reviewer in the admin over real HTTP (a served process's admin, not the
test client): signs in with the login form, then reads and posts pages with
the session and CSRF cookies, as a browser without JavaScript does."""

from __future__ import annotations

import html
import http.cookiejar
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass
class Page:
    status: int
    url: str
    text: str


class AdminSession:
    def __init__(self, base: str) -> None:
        self.base = base.rstrip("/")
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def _open(self, path: str, data: Mapping[str, str | list[str]] | None = None) -> Page:
        body = None
        if data is not None:
            # Django accepts the CSRF cookie's secret itself as the form's token.
            form = {"csrfmiddlewaretoken": self.csrf(), **data}
            body = urllib.parse.urlencode(form, doseq=True).encode()  # a list: repeated fields
        request = urllib.request.Request(self.base + path, data=body)
        try:
            with self.opener.open(request, timeout=20) as reply:
                return Page(reply.status, reply.url, html.unescape(reply.read().decode()))
        except urllib.error.HTTPError as err:
            return Page(err.code, err.url or path, html.unescape(err.read().decode()))

    def csrf(self) -> str:
        for cookie in self.jar:
            if cookie.name == "csrftoken":
                return str(cookie.value)
        raise AssertionError("no CSRF cookie: GET a page with a form first")

    def get(self, path: str) -> Page:
        return self._open(path)

    def post(self, path: str, data: Mapping[str, str | list[str]]) -> Page:
        """POST a form; redirects are followed (the page it lands on)."""
        return self._open(path, data)

    def login(self, username: str, password: str) -> AdminSession:
        self.get("/admin/login/")
        landed = self.post(
            "/admin/login/?next=/admin/",
            {"username": username, "password": password, "next": "/admin/"},
        )
        assert landed.status == 200 and landed.url.endswith("/admin/"), (landed.url, landed.status)
        return self
