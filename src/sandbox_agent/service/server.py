"""The HTTP server under the service: uvicorn, with a deadline on every request's head.

uvicorn times out an idle keep-alive connection, but not one that has sent part of a
request's head (or nothing at all): a client could hold a connection, and its file
descriptor, for ever without ever reaching the token gate. Here each connection must
complete a request's head within ``head_timeout_s`` of its start, or of the previous
answer, or it is closed (SR-4 S5, docs/SECURITY_REVIEW.md). The body is not covered:
the app reads it only after the token gate, so only a client holding the token can be
slow there.
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from sandbox_agent.service.settings import ServiceSettings


class ServiceConfig(uvicorn.Config):
    """uvicorn's configuration plus the head deadline its protocol reads."""

    def __init__(self, app: Any, *, head_timeout_s: float, **kwargs: Any) -> None:
        super().__init__(app, http=HeadDeadlineProtocol, **kwargs)
        self.head_timeout_s = head_timeout_s


class HeadDeadlineProtocol(H11Protocol):
    """uvicorn's h11 protocol; a request's head must arrive whole within the deadline."""

    def __init__(self, config: uvicorn.Config, *args: Any, **kwargs: Any) -> None:
        super().__init__(config, *args, **kwargs)
        self._head_timeout_s: float = getattr(config, "head_timeout_s")  # noqa: B009
        self._head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_head_timer()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:
            self._disarm_head_timer()  # a whole head arrived: the request is the app's now

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.transport.is_closing():
            return
        # The keep-alive timer covers the silence before the next request; this one, a
        # next request's head that starts but never ends.
        self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_timer()
        super().connection_lost(exc)

    def _arm_head_timer(self) -> None:
        self._disarm_head_timer()
        self._head_timer = self.loop.call_later(self._head_timeout_s, self._head_timed_out)

    def _disarm_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()


def server_config(app: Any, settings: ServiceSettings, **kwargs: Any) -> ServiceConfig:
    """The uvicorn configuration that serves ``app`` under ``settings``' limits."""
    return ServiceConfig(app, head_timeout_s=settings.head_timeout_s, **kwargs)
