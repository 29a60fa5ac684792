"""The media types a message's parts may carry, and the check a send makes of
them (A2A v1.0 §3.1.1: ContentTypeNotSupportedError, -32005).

A run reads a message's text (text parts) and a waiting Task's answer reads
its data (data parts); no run reads a file. So the accepted types are
``lifecycle.public.MEDIA_TYPES`` (``text/plain``, ``application/json``), the
list the Agent Card's ``defaultInputModes`` declares. A part's media type is
the one it states — v1.0's ``mediaType`` (any kind of part), a v0.3 file's
``mimeType`` — else the one its kind implies (``KIND_MEDIA_TYPES``; a file
that states none is ``application/octet-stream``). Parameters and case do not
matter (``Text/Plain; charset=utf-8`` is ``text/plain``). A file of an
accepted type is kept in the Task's history, as every part is.

One part the agent does not accept refuses the whole message before anything
is stored: no part is dropped on the way in. (``acceptedOutputModes`` is a
hint the spec says an agent SHOULD tailor its output to, not a refusal; this
agent's output is ``text/plain`` either way.)
"""

from __future__ import annotations

from typing import Any

from ..lifecycle.public import KIND_MEDIA_TYPES, MEDIA_TYPES
from .jsonrpc import CONTENT_TYPE_NOT_SUPPORTED, INVALID_PARAMS, RpcError

#: What a file part that states no media type is taken to be (RFC 2046).
UNTYPED_FILE = "application/octet-stream"


def essence(media_type: str) -> str:
    """``type/subtype`` of a media type, lower case, without parameters."""
    return media_type.split(";", 1)[0].strip().lower()


def media_type_of(part: dict[str, Any], where: str) -> str:
    """The media type of a part in any dialect's shape (checked: an object
    of a known kind)."""
    stated = part.get("mediaType")
    if stated is None and isinstance(part.get("file"), dict):
        stated, where = part["file"].get("mimeType"), f"{where}.file"
    if stated is not None and not isinstance(stated, str):
        key = "mediaType" if "mediaType" in part else "mimeType"
        raise RpcError(
            INVALID_PARAMS,
            f"Invalid params: {where}.{key} must be a string",
            data={"field": f"{where}.{key}"},
        )
    if stated:
        return essence(stated)
    kind = part.get("kind")
    if kind is None:  # v1.0: the kind is the field the part carries
        kind = "text" if "text" in part else "data" if "data" in part else "file"
    return KIND_MEDIA_TYPES.get(kind, UNTYPED_FILE)


def check_media_types(parts: Any, where: str = "params.message.parts") -> None:
    """-32005 naming the first part whose media type this agent does not accept
    (``parts``: a list whose shapes were checked)."""
    for index, part in enumerate(parts or ()):
        if not isinstance(part, dict):
            continue  # the parts' shapes are checked first, elsewhere
        media_type = media_type_of(part, f"{where}[{index}]")
        if media_type not in MEDIA_TYPES:
            raise RpcError(
                CONTENT_TYPE_NOT_SUPPORTED,
                f"Content type not supported: {where}[{index}] is {media_type[:100]}; "
                f"this agent accepts {', '.join(MEDIA_TYPES)}",
                data={
                    "field": f"{where}[{index}]",
                    "mediaType": media_type[:100],
                    "supported": list(MEDIA_TYPES),
                },
            )


def check_output_modes(configuration: dict[str, Any]) -> None:
    """``configuration.acceptedOutputModes``, when given, is a list of strings
    (-32602 otherwise); what it lists is a hint, never a refusal."""
    modes = configuration.get("acceptedOutputModes")
    if modes is not None and not (
        isinstance(modes, list) and all(isinstance(m, str) for m in modes)
    ):
        raise RpcError(
            INVALID_PARAMS,
            "Invalid params: configuration.acceptedOutputModes must be a list of media types",
            data={"field": "params.configuration.acceptedOutputModes"},
        )


__all__ = [
    "check_media_types",
    "check_output_modes",
    "essence",
    "media_type_of",
]
