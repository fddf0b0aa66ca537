"""The HTTP server under the service: uvicorn, with a deadline on every connection.

uvicorn times out an idle keep-alive connection, but nothing else: a client could hold a
connection, and its file descriptor, for ever by sending part of a head, by declaring a
body and sending it a byte at a time (each byte disarmed uvicorn's keep-alive timer),
or by reading nothing of a long answer. Here (SR-4 S5 and SR-8 S8-1,
docs/review/SR-8-service.md) a connection

- must send a whole request head within ``head_timeout_s`` of opening, or of its
  previous answer;
- must send a request's whole body within ``body_timeout_s`` of its head, whether the
  app reads it or not (an answer given before the body was read does not end the wait);
- is cut when it has taken none of an answer for ``send_timeout_s``;
- is answered 503 and closed at once, before anything is read, when ``max_connections``
  are already open;
- is answered 400 and closed when a request head is over ``MAX_HEAD_BYTES``, however
  the head arrived (h11's own limit counts only a head still incomplete after a read).

``ServiceServer`` also stops the service's runs as soon as a stop begins (SIGTERM,
SIGINT), before uvicorn waits for open connections, and bounds that wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import struct
from typing import Any, NamedTuple

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from sandbox_agent.service.settings import ServiceSettings

MAX_HEAD_BYTES = 16 * 1024
"""h11's default limit for an incomplete head, applied here to every whole one too."""


class ConnectionLimits(NamedTuple):
    head_timeout_s: float
    body_timeout_s: float
    send_timeout_s: float
    max_connections: int
    max_head_bytes: int = MAX_HEAD_BYTES

    @classmethod
    def of(cls, settings: ServiceSettings) -> ConnectionLimits:
        return cls(
            head_timeout_s=settings.head_timeout_s,
            body_timeout_s=settings.body_timeout_s,
            send_timeout_s=settings.send_timeout_s,
            max_connections=settings.max_connections,
        )


def _canned(status: bytes, detail: str, extra: bytes = b"") -> bytes:
    body = json.dumps({"detail": detail}).encode()
    return (
        b"HTTP/1.1 " + status + b"\r\ncontent-type: application/json\r\n"
        b"content-length: " + str(len(body)).encode() + b"\r\n" + extra
        + b"connection: close\r\ncache-control: no-store\r\n\r\n" + body
    )  # fmt: skip


TOO_MANY_CONNECTIONS = _canned(
    b"503 Service Unavailable",
    "too many connections are open: retry after the Retry-After seconds",
    b"retry-after: 1\r\n",
)


class ServiceConfig(uvicorn.Config):
    """uvicorn's configuration plus the connection limits its protocol reads."""

    def __init__(self, app: Any, *, limits: ConnectionLimits, **kwargs: Any) -> None:
        super().__init__(app, http=HeadDeadlineProtocol, **kwargs)
        self.limits = limits


class BoundedHeadConnection(h11.Connection):
    """h11's server connection; a request head over ``max_head_bytes`` is a protocol error
    even when it arrived whole (h11 bounds only the bytes of a head still incomplete)."""

    def __init__(self, max_head_bytes: int) -> None:
        super().__init__(h11.SERVER, max_incomplete_event_size=max_head_bytes)
        self._max_head_bytes = max_head_bytes

    def next_event(self) -> Any:
        before = len(self._receive_buffer)
        event = super().next_event()
        if isinstance(event, h11.Request) and before - len(self._receive_buffer) > (
            self._max_head_bytes
        ):
            # uvicorn answers a RemoteProtocolError with a 400 and closes the connection.
            raise h11.RemoteProtocolError("request head too large", error_status_hint=431)
        return event


_HEAD = "head"


class HeadDeadlineProtocol(H11Protocol):
    """uvicorn's h11 protocol with every limit of ``ConnectionLimits`` (named for the first
    of them, the head deadline of SR-4 S5)."""

    def __init__(self, config: uvicorn.Config, *args: Any, **kwargs: Any) -> None:
        super().__init__(config, *args, **kwargs)
        self._limits: ConnectionLimits = getattr(config, "limits")  # noqa: B009
        self.conn = BoundedHeadConnection(self._limits.max_head_bytes)
        self._deadline: asyncio.TimerHandle | None = None
        self._owed: object = None
        """What the armed deadline waits for: ``_HEAD``, or the cycle whose body it is."""
        self._stall: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self._limits.max_connections:
            transport.write(TOO_MANY_CONNECTIONS)
            transport.close()
            return
        self._watch_request()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch_request()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # may start a pipelined request's cycle
        self._watch_request()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_deadline()
        self._cancel_stall()
        super().connection_lost(exc)

    def pause_writing(self) -> None:
        super().pause_writing()
        self._arm_stall()  # the client reads nothing of what is already on its way

    def resume_writing(self) -> None:
        super().resume_writing()
        self._cancel_stall()
        if self.transport.is_closing() and self.transport.get_write_buffer_size():
            self._arm_stall()  # hung up on, still flushing: the flush has a deadline too

    # What the client owes us, and until when.

    def _watch_request(self) -> None:
        if self.transport.is_closing():
            return
        state = self.conn.their_state
        if state is h11.IDLE:
            if self._owed is not _HEAD:
                self._arm_deadline(_HEAD, self._limits.head_timeout_s)
        elif state is h11.SEND_BODY:
            # Counted from the head: neither more bytes nor an early answer extend it.
            if self._owed is not self.cycle:
                self._arm_deadline(self.cycle, self._limits.body_timeout_s)
        else:
            self._cancel_deadline()  # the whole request is in: the app's turn

    def _arm_deadline(self, owed: object, seconds: float) -> None:
        self._cancel_deadline()
        self._owed = owed
        self._deadline = self.loop.call_later(seconds, self._deadline_passed)

    def _cancel_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self._owed = None

    def _deadline_passed(self) -> None:
        self._deadline = None
        self._owed = None
        if self.conn.their_state in (h11.IDLE, h11.SEND_BODY):
            self._hang_up()

    def _hang_up(self) -> None:
        """Close; an answer still being flushed gets ``send_timeout_s``, then is cut."""
        if not self.transport.is_closing():
            self.transport.close()
        if self.transport.get_write_buffer_size():
            self._arm_stall()

    # What we owe the client, and how long it may leave it unread.

    def _arm_stall(self) -> None:
        if self._stall is None:
            self._stall = self.loop.call_later(self._limits.send_timeout_s, self._cut)

    def _cut(self) -> None:
        """Reset the connection: a plain close would leave the unread answer to the kernel,
        which keeps the socket (and its buffers) until the client reads or times out."""
        sock = self.transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.transport.abort()

    def _cancel_stall(self) -> None:
        if self._stall is not None:
            self._stall.cancel()
            self._stall = None


class ServiceServer(uvicorn.Server):
    """uvicorn's server; a stop first stops the service's runs (``app.begin_stop``), then
    waits at most the configured graceful timeout for open connections."""

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        from sandbox_agent.service.app import begin_stop

        await asyncio.to_thread(begin_stop, self.config.app)  # one store write: not on the loop
        await super().shutdown(sockets)


def server_config(app: Any, settings: ServiceSettings, **kwargs: Any) -> ServiceConfig:
    """The uvicorn configuration that serves ``app`` under ``settings``' limits.

    ``X-Forwarded-For`` is believed only from ``settings.trusted_proxies`` (uvicorn
    believes it from 127.0.0.1 by default, so any local client could choose its address).
    """
    proxies = list(settings.trusted_proxies)
    return ServiceConfig(
        app,
        limits=ConnectionLimits.of(settings),
        proxy_headers=bool(proxies),
        forwarded_allow_ips=proxies or None,
        timeout_graceful_shutdown=settings.stop_timeout_s,
        **kwargs,
    )


def build_server(app: Any, settings: ServiceSettings, **kwargs: Any) -> ServiceServer:
    """The server ``sandbox-agent serve`` runs: ``app`` under ``settings``' limits."""
    return ServiceServer(server_config(app, settings, **kwargs))
