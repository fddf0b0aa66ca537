"""Stopping a model request in flight when its run is cancelled.

A blocked ``recv`` is not woken by a Python signal handler that only sets a flag (the
interpreter retries the call, PEP 475), nor by closing its socket from another thread.
``shutdown(SHUT_RDWR)`` wakes it: the read returns at once, the HTTP client raises, and
the provider gives up the request as cancelled. So the provider's network backend keeps
every socket it opened, and a watcher thread, woken by the run's ``CancelToken``, shuts
them all down and refuses new connections (a retry after the cancel).
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
from collections.abc import Iterable
from typing import Any

import httpcore2
from typing_extensions import override

from sandbox_agent.providers.base import Cancellation

WATCH_SECONDS = 0.2
"""How often the watcher looks at a token whose cancel reaches it only through a parent
(a token's own cancel wakes it at once)."""


class AbortableBackend(httpcore2.NetworkBackend):
    """``inner``, with every stream it opened kept until closed, so ``abort`` can wake
    every read and write in flight."""

    def __init__(self, inner: httpcore2.NetworkBackend) -> None:
        self._inner = inner
        self._streams: set[_Tracked] = set()
        self._lock = threading.Lock()
        self.aborted = False

    def _track(self, stream: httpcore2.NetworkStream) -> httpcore2.NetworkStream:
        tracked = _Tracked(stream, self)
        with self._lock:
            self._streams.add(tracked)
        if self.aborted:  # the cancel came during the connect
            tracked.shut()
        return tracked

    def _forget(self, stream: _Tracked) -> None:
        with self._lock:
            self._streams.discard(stream)

    def _refuse_after_abort(self) -> None:
        if self.aborted:
            raise httpcore2.ConnectError("the run was cancelled")

    @override
    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.NetworkStream:
        self._refuse_after_abort()
        stream = self._inner.connect_tcp(host, port, timeout, local_address, socket_options)
        return self._track(stream)

    @override
    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.NetworkStream:
        self._refuse_after_abort()
        return self._track(self._inner.connect_unix_socket(path, timeout, socket_options))

    @override
    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)

    def abort(self) -> None:
        """Wake every read and write in flight and refuse new connections, for good."""
        self.aborted = True
        with self._lock:
            streams = list(self._streams)
        for stream in streams:
            stream.shut()


class _Tracked(httpcore2.NetworkStream):
    def __init__(self, inner: httpcore2.NetworkStream, owner: AbortableBackend) -> None:
        self._inner = inner
        self._owner = owner

    def shut(self) -> None:
        sock = self._inner.get_extra_info("socket")
        if isinstance(sock, socket.socket):
            # OSError: closed already, or never connected; nothing in flight to wake.
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    @override
    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, timeout)

    @override
    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, timeout)

    @override
    def close(self) -> None:
        self._owner._forget(self)
        self._inner.close()

    @override
    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore2.NetworkStream:
        # The TLS stream owns the socket from now on: track it instead of this one.
        self._owner._forget(self)
        return self._owner._track(self._inner.start_tls(ssl_context, server_hostname, timeout))

    @override
    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


def make_abortable(pool: object) -> AbortableBackend | None:
    """Wrap the network backend of an httpcore connection pool; None for another pool."""
    if not isinstance(pool, httpcore2.ConnectionPool):
        return None
    # httpcore takes its backend at construction only; httpx builds the pool for us.
    backend = AbortableBackend(pool._network_backend)
    pool._network_backend = backend
    return backend


class Watcher:
    """A daemon thread that calls ``abort`` once ``cancel`` is set, until ``stop``."""

    def __init__(self, cancel: Cancellation, abort: AbortableBackend) -> None:
        self._cancel = cancel
        self._abort = abort
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="request-watcher", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stopped.is_set():
            if self._cancel.wait(WATCH_SECONDS) or self._cancel.cancelled:
                self._abort.abort()
                return

    def stop(self) -> None:
        """End the watch (the provider is closed); returns at once."""
        self._stopped.set()
