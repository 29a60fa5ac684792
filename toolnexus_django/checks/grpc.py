"""``GRPC``: the gRPC binding — its address, the URL the card names, and
whether what it needs is installed (looked up, never imported: grpc is only
ever loaded in a worker that serves it)."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable
from typing import Any

from django.core.checks import CheckMessage

from ..conf import setting_name
from ..serving.addresses import parse_addrport
from .problems import problem
from .sections import dict_section

#: What serving gRPC imports: grpcio, and the a2a-sdk's generated code.
NEEDS = ("grpc", "a2a.types")
WILDCARDS = ("0.0.0.0", "::")


def installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package that is missing
        return False


def check_grpc(app_configs: Iterable[Any] | None = None, **kwargs: Any) -> list[CheckMessage]:
    grpc, errors = dict_section("GRPC", not_dict="E800", unknown="E801")
    if grpc is None:
        return errors
    url = grpc["URL"]
    if url is not None and (not isinstance(url, str) or not url.strip()):
        errors.append(problem("E803", f"{setting_name('GRPC', 'URL')} must be a string or None"))
    address = grpc["ADDRESS"]
    if address is None:
        return errors
    try:
        host, _port = parse_addrport(address) if isinstance(address, str) and address else ("", 0)
        if not host:
            raise ValueError("it must be a string")
    except ValueError as e:
        name = setting_name("GRPC", "ADDRESS")
        return [*errors, problem("E802", f'{name} must be "host:port" or None: {e}')]
    missing = [m for m in NEEDS if not installed(m)]
    if missing:
        errors.append(
            problem(
                "E804",
                f"{setting_name('GRPC', 'ADDRESS')} is set but {', '.join(missing)} "
                "cannot be imported",
                hint="Install the gRPC extra: pip install 'toolnexus-django[grpc]'.",
            )
        )
    if host in WILDCARDS and url is None:
        errors.append(
            problem(
                "W800",
                f"{setting_name('GRPC', 'ADDRESS')} listens on {host}: the Agent Card would "
                "name an address clients cannot dial",
                hint=f"Set {setting_name('GRPC', 'URL')} to the host:port clients reach.",
            )
        )
    return errors
