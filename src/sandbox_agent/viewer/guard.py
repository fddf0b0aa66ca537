"""The viewer's HTTP guard: GET only, loopback ``Host`` only, strict security headers.

``view`` needs no token (docs/DECISIONS.md, "Run viewer: no token for view"), so what
stands between a hostile web page in the user's browser and the served folder is this:
the server listens on loopback only, and answers only requests whose ``Host`` names a
loopback host (``httpguard.host_is_loopback``, the service's check too), so a
DNS-rebound name (``evil.example`` resolving to 127.0.0.1) gets 421.
Nothing it serves can change anything, so only ``GET`` and ``HEAD`` are answered.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sandbox_agent import httpguard
from sandbox_agent.httpguard import host_is_loopback

SECURITY_HEADERS = [*httpguard.SECURITY_HEADERS, (b"cross-origin-resource-policy", b"same-origin")]
"""The service's security headers (``httpguard``), and the viewer's own after them."""
FOREIGN_HOST = (
    "the Host header names another server: the viewer answers only loopback names "
    "(a guard against DNS rebinding); use the URL it printed"
)
READ_ONLY = "the viewer is read-only: only GET and HEAD are answered"


class ViewerGuard:
    """Refuse foreign hosts (421) and methods that are not GET or HEAD (405); add the
    security headers to every answer."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        hosts = [value for name, value in scope.get("headers") or [] if name == b"host"]
        if len(hosts) != 1 or not host_is_loopback(hosts[0]):
            await _answer(send, 421, FOREIGN_HOST)
            return
        if scope.get("method") not in ("GET", "HEAD"):
            await _answer(send, 405, READ_ONLY, [(b"allow", b"GET, HEAD")])
            return

        async def secure_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        await self._app(scope, receive, secure_send)


async def _answer(
    send: Send, status: int, detail: str, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    await httpguard.send_refusal(send, status, detail, [*(extra or []), *SECURITY_HEADERS])
