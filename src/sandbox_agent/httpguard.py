"""Which names are this host's own: the one ``Host`` check of the viewer and the service;
and the rest both servers guard with: their security headers and one-line refusals.

Both servers listen on loopback and answer only requests whose ``Host`` header names a
loopback host, so a page of another site that rebinds its name to 127.0.0.1 (DNS
rebinding) gets 421 (docs/VIEWER.md, docs/SERVICE.md). The header is read by a strict
grammar, not taken apart loosely (SR-12 D6: ``127.0.0.1:80@evil.example`` and
``[::1]evil`` passed)::

    host  = "localhost" | IPv4 dotted quad in 127.0.0.0/8 | "[" IPv6 loopback "]"
    value = host [ ":" port ]        port = 1 to 5 ASCII digits, 1..65535

``localhost`` in any case; nothing else: no user info, no text after ``]``, no space
inside, no trailing dot, no IPv6 zone. Imports nothing of the package, so both servers
use it without importing each other.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from starlette.types import Send

_HOST = re.compile(
    r"(?:(?P<name>localhost)|(?P<ipv4>[0-9.]+)|\[(?P<ipv6>[0-9a-f:.]+)\])"
    r"(?::(?P<port>[0-9]{1,5}))?",
    re.ASCII | re.IGNORECASE,
)
_MAX_PORT = 65535

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
"""Both servers' pages load nothing from anywhere else and run no inline script or
style: model output shown on them can never become code, even if an escaping bug
slipped in."""
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
)
"""On every answer of both servers (the viewer adds its own after these)."""


def is_loopback_name(host: str) -> bool:
    """True for ``localhost`` (any case) and loopback addresses (``127.0.0.0/8``,
    ``::1``), written bare: an address to bind, not a ``Host`` header."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def host_is_loopback(value: bytes) -> bool:
    """True when a ``Host`` header value is exactly a loopback host, with or without a
    port (the module docstring's grammar)."""
    try:
        # Only the optional white space around a field value is not part of it (RFC 9110).
        text = value.decode("ascii").strip(" \t")
    except UnicodeDecodeError:
        return False
    match = _HOST.fullmatch(text)
    if match is None:
        return False
    port = match.group("port")
    if port is not None and not 1 <= int(port) <= _MAX_PORT:
        return False
    if match.group("name") is not None:
        return True
    try:
        if match.group("ipv4") is not None:
            return ipaddress.IPv4Address(match.group("ipv4")).is_loopback
        return ipaddress.IPv6Address(match.group("ipv6")).is_loopback
    except ValueError:
        return False


async def send_refusal(
    send: Send, status: int, detail: str, headers: Sequence[tuple[bytes, bytes]]
) -> None:
    """Answer ``status`` with ``{"detail": detail}`` as JSON, ``headers`` after its type
    and length: a refusal made before the app sees the request."""
    body = json.dumps({"detail": detail}).encode()
    start_headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *headers,
    ]
    await send({"type": "http.response.start", "status": status, "headers": start_headers})
    await send({"type": "http.response.body", "body": body})
