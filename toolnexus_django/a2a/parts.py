"""Refusing invalid parts on the way in (what a part is: lifecycle.parts)."""

from __future__ import annotations

from typing import Any

from ..lifecycle.parts import problem
from .jsonrpc import INVALID_PARAMS, RpcError


def check(parts: Any, where: str = "params.message.parts") -> list[dict[str, Any]]:
    """``parts`` if every one is valid; otherwise -32602 naming the first bad one."""
    if not isinstance(parts, list):
        raise RpcError(INVALID_PARAMS, f"Invalid params: {where} must be an array")
    for index, part in enumerate(parts):
        reason = problem(part)
        if reason is not None:
            raise RpcError(
                INVALID_PARAMS,
                f"Invalid params: {where}[{index}] {reason}",
                data={"field": f"{where}[{index}]"},
            )
    return parts
