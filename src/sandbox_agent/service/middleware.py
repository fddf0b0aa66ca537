"""Pure ASGI middleware: the bearer-token gate (401), a request body size limit (413), and
security headers on every answer."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sandbox_agent.httpguard import SECURITY_HEADERS, host_is_loopback, send_refusal
from sandbox_agent.service.auth import token_matches

PUBLIC_PATHS = frozenset({"/health", "/", "/openapi.json", "/docs", "/docs/oauth2-redirect"})
"""Paths that need no token: liveness, the page shell, its static files, the schema."""
PUBLIC_PREFIXES = ("/static/",)


class LimitsMiddleware:
    """Refuse a foreign ``Host`` (on a loopback server) and bodies over ``max_body_bytes``
    (declared or as read), and add security headers to every answer.

    The body is never read here, only counted as the app reads it; the app reads it only
    once the token gate has let the request through, so a client without the token can
    never make the server wait for, or hold, its body.
    """

    def __init__(self, app: ASGIApp, max_body_bytes: int, loopback_only: bool = False) -> None:
        self._app = app
        self._max = max_body_bytes
        self._loopback_only = loopback_only

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        headers = scope.get("headers") or []
        hosts = [value for name, value in headers if name == b"host"]
        if self._loopback_only and not all(map(host_is_loopback, hosts)):
            await send_refusal(send, 421, FOREIGN_HOST_DETAIL, SECURITY_HEADERS)
            return
        declared = dict(headers).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self._max):
            await _too_large(send, self._max)
            return
        received = 0
        started = refused = False

        async def counted_receive() -> Message:
            nonlocal received, refused
            message = await receive()
            if message["type"] == "http.request" and not refused:
                received += len(message.get("body", b""))
                if received > self._max:
                    refused = True
                    if not started:
                        await _too_large(send, self._max)
            # The app sees the client gone, stops reading, and its answer is dropped.
            return {"type": "http.disconnect"} if refused else message

        async def secure_send(message: Message) -> None:
            nonlocal started
            if refused:
                return
            if message["type"] == "http.response.start":
                started = True
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        await self._app(scope, counted_receive, secure_send)


FOREIGN_HOST_DETAIL = (
    "the Host header names another server: this one listens on loopback and answers "
    "only loopback names (a guard against DNS rebinding); use http://127.0.0.1:PORT/"
)


class TokenGate:
    """Refuse every non-public request without the bearer token, before anything reads it.

    The route dependencies check the token too, but only after FastAPI has parsed the
    body: without this gate a malformed body from an unauthenticated client would get
    a 400 that describes it instead of a 401.
    """

    def __init__(self, app: ASGIApp, token: str) -> None:
        self._app = app
        self._token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        public = path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES)
        if scope["type"] != "http" or public:
            await self._app(scope, receive, send)
            return
        given = dict(scope.get("headers") or []).get(b"authorization")
        if token_matches(self._token, given.decode("latin-1") if given is not None else None):
            await self._app(scope, receive, send)
            return
        detail = (
            "missing or wrong bearer token: send 'Authorization: Bearer TOKEN' "
            "with the token from the server's token file"
        )
        # The security headers come from LimitsMiddleware, which wraps this gate. The body
        # is never read: the connection is closed rather than drained.
        extra = [(b"www-authenticate", b"Bearer"), (b"connection", b"close")]
        await send_refusal(send, 401, detail, extra)


async def _too_large(send: Send, limit: int) -> None:
    detail = f"request body too large: at most {limit} bytes"
    await send_refusal(send, 413, detail, [(b"connection", b"close"), *SECURITY_HEADERS])
