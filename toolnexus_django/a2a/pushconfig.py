"""Push notification configs on the wire: parsed from and rendered to each
dialect, and the interface of whatever stores them (:class:`PushConfigs`).

v0.3 (``tasks/pushNotificationConfig/*``, ``configuration.pushNotificationConfig``)::

    {"taskId": "t", "pushNotificationConfig": {"id": "c", "url": "https://...",
     "token": "...", "authentication": {"schemes": ["Bearer"], "credentials": "..."}}}

v1.0 (``*TaskPushNotificationConfig*``, ``configuration.taskPushNotificationConfig``)::

    {"taskId": "t", "id": "c", "url": "https://...", "token": "...",
     "authentication": {"scheme": "Bearer", "credentials": "..."}}

Credentials are write-only: a config read back names its scheme, never its
credentials (the token, which the receiver checks, is returned).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Protocol

from ..stores import DjangoTaskStore, FileTaskStore, InMemoryTaskStore
from .dialects import Dialect
from .jsonrpc import INVALID_PARAMS, RpcError

#: The schemes a notification can carry in its ``Authorization`` header.
SCHEMES = ("Bearer", "Basic")
MAX_CONFIGS_PER_TASK = 10
MAX_TOKEN_CHARS = 4096


def keeps_configs(store: Any) -> bool:
    """Whether ``store`` keeps push configs: the django store (in the
    database), the memory and file stores (beside the Task); a custom store
    does not."""
    return isinstance(store, (DjangoTaskStore, InMemoryTaskStore, FileTaskStore))


class PushURLRefused(ValueError):
    """The config's URL is one the server will not call (SSRF rules)."""


@dataclass(frozen=True)
class PushConfigSpec:
    """A config as a client asked for it."""

    url: str
    config_id: str | None = None
    token: str = ""
    scheme: str = ""
    credentials: str = ""


@dataclass(frozen=True)
class StoredPushConfig:
    """A config as stored (credentials not included)."""

    task_id: str
    config_id: str
    url: str
    token: str
    scheme: str
    dialect: str
    disabled: bool = False


class PushConfigs(Protocol):
    """Where a Task's configs live (the views supply the database's)."""

    def create(
        self, task_id: str, owner: str | None, spec: PushConfigSpec, dialect: str, *, after: int
    ) -> StoredPushConfig:
        """Store ``spec`` for the Task (replacing a config of the same id);
        notifications start after event ``after`` (-1: after the latest).
        Its URL was checked (:meth:`check`) by the caller; raises ValueError
        past the limit, LookupError when the Task is gone."""

    def check(self, spec: PushConfigSpec) -> None:
        """Raise :class:`PushURLRefused` when ``spec``'s URL may not be called."""

    def get(self, task_id: str, config_id: str | None) -> StoredPushConfig | None: ...

    def list(self, task_id: str) -> list[StoredPushConfig]: ...

    def delete(self, task_id: str, config_id: str) -> bool: ...


#: A value that goes in a notification's header as it is: printable ASCII,
#: no leading or trailing space (HTTP strips it: the receiver would compare
#: another value). http.client cannot send CR/LF or anything beyond Latin-1
#: (a config holding them could never deliver), and NUL, DEL, other controls,
#: a BOM or Latin-1 bytes reach each receiver differently, if at all.
_HEADER_SAFE = re.compile(r"[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?")
HEADER_RULE = (
    "printable ASCII with no control characters or line breaks, no leading or trailing space"
)


def header_safe(value: str) -> bool:
    """Whether ``value`` can be sent as a header's value, as it is."""
    return bool(_HEADER_SAFE.fullmatch(value))


def _text(
    value: Any, name: str, *, limit: int = 2048, required: bool = False, header: bool = False
) -> str:
    if value is None or value == "":
        if required:
            raise RpcError(INVALID_PARAMS, f"Invalid params: {name} is required")
        return ""
    if not isinstance(value, str) or len(value) > limit or ("\x00" in value and not header):
        raise RpcError(
            INVALID_PARAMS, f"Invalid params: {name} must be a string of at most {limit} chars"
        )
    if header and not header_safe(value):
        raise RpcError(
            INVALID_PARAMS,
            f"Invalid params: {name} is sent in a header, so it must be {HEADER_RULE}",
        )
    return value


def _scheme(authentication: Any, dialect: Dialect) -> tuple[str, str]:
    if authentication is None:
        return "", ""
    if not isinstance(authentication, dict):
        raise RpcError(INVALID_PARAMS, "Invalid params: authentication must be an object")
    if dialect is Dialect.V10:
        wanted = [authentication.get("scheme")] if authentication.get("scheme") else []
    else:
        wanted = authentication.get("schemes") or []
        if not isinstance(wanted, list):
            raise RpcError(INVALID_PARAMS, "Invalid params: authentication.schemes must be a list")
    credentials = _text(
        authentication.get("credentials"), "authentication.credentials", header=True
    )
    if not wanted:
        return "", ""
    for scheme in wanted:
        for known in SCHEMES:
            if isinstance(scheme, str) and scheme.lower() == known.lower():
                return known, credentials
    raise RpcError(
        INVALID_PARAMS,
        f"Invalid params: authentication scheme not supported (supported: {', '.join(SCHEMES)})",
    )


def parse_spec(config: Any, dialect: Dialect) -> PushConfigSpec:
    """A config object (v1.0: the TaskPushNotificationConfig itself; v0.3 and
    toolnexus: the PushNotificationConfig) as a spec."""
    if not isinstance(config, dict):
        raise RpcError(INVALID_PARAMS, "Invalid params: the push config must be an object")
    scheme, credentials = _scheme(config.get("authentication"), dialect)
    return PushConfigSpec(
        url=_text(config.get("url"), "url", required=True),
        config_id=_text(config.get("id"), "id", limit=255) or None,
        token=_text(config.get("token"), "token", limit=MAX_TOKEN_CHARS, header=True),
        scheme=scheme,
        credentials=credentials,
    )


def parse_create(params: dict[str, Any], dialect: Dialect) -> tuple[str, PushConfigSpec]:
    """(task id, spec) of ``tasks/pushNotificationConfig/set`` (v0.3) or
    ``CreateTaskPushNotificationConfig`` (v1.0)."""
    task_id = _text(params.get("taskId"), "taskId", limit=255, required=True)
    if dialect is Dialect.V10:
        return task_id, parse_spec(params, dialect)
    return task_id, parse_spec(params.get("pushNotificationConfig"), dialect)


def parse_ref(params: dict[str, Any], dialect: Dialect, *, need_id: bool) -> tuple[str, str | None]:
    """(task id, config id) of a get / list / delete."""
    if dialect is Dialect.V10:
        task_id = _text(params.get("taskId"), "taskId", limit=255, required=True)
        config_id = _text(params.get("id"), "id", limit=255, required=need_id) or None
    else:
        task_id = _text(params.get("id"), "id", limit=255, required=True)
        config_id = (
            _text(
                params.get("pushNotificationConfigId"),
                "pushNotificationConfigId",
                limit=255,
                required=need_id,
            )
            or None
        )
    return task_id, config_id


def render(config: StoredPushConfig, dialect: Dialect) -> dict[str, Any]:
    """The config in ``dialect`` (never its credentials)."""
    inner: dict[str, Any] = {"id": config.config_id, "url": config.url}
    if config.token:
        inner["token"] = config.token
    if dialect is Dialect.V10:
        out: dict[str, Any] = {"taskId": config.task_id, **inner}
        if config.scheme:
            out["authentication"] = {"scheme": config.scheme}
        return out
    if config.scheme:
        inner["authentication"] = {"schemes": [config.scheme]}
    return {"taskId": config.task_id, "pushNotificationConfig": inner}


__all__ = [
    "HEADER_RULE",
    "PushConfigSpec",
    "PushConfigs",
    "PushURLRefused",
    "StoredPushConfig",
    "header_safe",
    "parse_create",
    "parse_ref",
    "parse_spec",
    "render",
]
