"""The HTTP client of the real providers: no redirects, bounded answers, a total deadline.

The SDKs' own clients follow redirects (httpx2 then keeps ``x-api-key`` and, on a 307 or
308, the whole transcript on the way to another origin), read any answer whole into
memory, and time out per read only, so an endpoint trickling one byte a second holds a
call for ever. This client refuses all three: a redirect is an error answer (``HTTP
3xx``), an answer over ``MAX_RESPONSE_BYTES`` is dropped unread, and each request ends
at its deadline (``DEFAULT_REQUEST_TIMEOUT_SECONDS`` from its start, or the run's
wall clock, whichever comes first; at most one read timeout later when a server goes
silent at the last moment). Once watching a run (``watch``), its cancel stops the request
in flight at once (``providers.abort``): ``RequestCancelled``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import httpx2
from typing_extensions import override

from sandbox_agent.providers.abort import Watcher, make_abortable
from sandbox_agent.providers.base import Cancellation
from sandbox_agent.providers.errors import ProviderError, snippet
from sandbox_agent.providers.meter import Failure, UnreadableAnswer, unreadable_answer
from sandbox_agent.providers.options import DEFAULT_REQUEST_TIMEOUT_SECONDS

MAX_RESPONSE_BYTES = 16 * 1024 * 1024
"""One model answer; real ones are a few KiB (output tokens are capped per request)."""


class ResponseTooLarge(httpx2.TransportError):
    """The answer is larger than ``MAX_RESPONSE_BYTES``."""


class RunDeadlinePassed(httpx2.TimeoutException):
    """The run's wall clock ran out during the request."""


class RequestCancelled(httpx2.TransportError):
    """The run was cancelled before or during the request."""


SEEN_BYTES = 256
"""The first bytes of each answer kept, to say what an unreadable answer was."""


class AnswerSeen:
    """The last answer's head and first bytes: what an unreadable answer looked like."""

    def __init__(self, request: httpx2.Request, response: httpx2.Response) -> None:
        url = request.url
        self.where = f"{url.host}:{url.port or (443 if url.scheme == 'https' else 80)}"
        self.status = response.status_code
        self.content_type = response.headers.get("content-type", "")
        self.head = b""

    def describe(self) -> str:
        """One line: status, origin, content type and the body's first characters."""
        kind = self.content_type[:60] or "no content type"
        return f"HTTP {self.status} from {self.where}, {kind}, body {snippet(self.head)}"


class BoundedTransport(httpx2.HTTPTransport):
    """An ``HTTPTransport`` whose answers are bounded in bytes and in total time."""

    def __init__(
        self,
        *,
        max_bytes: int = MAX_RESPONSE_BYTES,
        total_seconds: float = DEFAULT_REQUEST_TIMEOUT_SECONDS,
    ) -> None:
        super().__init__()
        self.max_bytes = max_bytes
        self.total_seconds = total_seconds
        self.run_deadline: float | None = None
        """``time.monotonic()`` value at which the run's wall clock runs out; set per turn."""
        self.seen: AnswerSeen | None = None
        """The last answer's head and first bytes."""
        self._abortable = make_abortable(self._pool)
        self._cancel: Cancellation | None = None
        self._watcher: Watcher | None = None

    def watch(self, cancel: Cancellation) -> None:
        """Stop every request, the one in flight included, once ``cancel`` is set."""
        self._cancel = cancel
        if self._watcher is not None:
            self._watcher.stop()
        if self._abortable is not None:
            self._watcher = Watcher(cancel, self._abortable)

    def cancelled(self) -> bool:
        """The run this transport watches was cancelled."""
        return self._cancel is not None and self._cancel.cancelled

    @override
    def close(self) -> None:
        if self._watcher is not None:
            self._watcher.stop()
        super().close()

    def _deadline(self) -> tuple[float, bool]:
        own = time.monotonic() + self.total_seconds
        if self.run_deadline is not None and self.run_deadline <= own:
            return self.run_deadline, True
        return own, False

    @override
    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        if self.cancelled():
            raise RequestCancelled("the run was cancelled", request=request)
        try:
            return self._bounded(request)
        except httpx2.TransportError as error:
            if self.cancelled() and not isinstance(error, RequestCancelled):
                raise RequestCancelled("the run was cancelled", request=request) from error
            raise

    def _bounded(self, request: httpx2.Request) -> httpx2.Response:
        deadline, is_run = self._deadline()
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _timeout(is_run, request)
        timeouts = dict(request.extensions.get("timeout") or {})
        for name in ("connect", "read", "write", "pool"):
            current = timeouts.get(name)
            timeouts[name] = remaining if current is None else min(current, remaining)
        request.extensions["timeout"] = timeouts
        self.seen = None
        response = super().handle_request(request)
        self.seen = seen = AnswerSeen(request, response)
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_bytes:
            response.close()
            raise ResponseTooLarge(f"answer over {self.max_bytes} bytes", request=request)
        inner = response.stream
        assert isinstance(inner, httpx2.SyncByteStream)  # noqa: S101 - an HTTPTransport's
        response.stream = _BoundedStream(
            inner, request, deadline, is_run, self.max_bytes, seen=seen, stopped=self.cancelled
        )
        return response


class _BoundedStream(httpx2.SyncByteStream):
    def __init__(
        self,
        inner: httpx2.SyncByteStream,
        request: httpx2.Request,
        deadline: float,
        is_run: bool,
        max_bytes: int,
        *,
        seen: AnswerSeen,
        stopped: Callable[[], bool],
    ) -> None:
        self._inner = inner
        self._request = request
        self._deadline = deadline
        self._is_run = is_run
        self._max_bytes = max_bytes
        self._seen = seen
        self._stopped = stopped

    @override
    def __iter__(self) -> Iterator[bytes]:
        try:
            yield from self._bounded()
        except httpx2.TransportError as error:
            if self._stopped() and not isinstance(error, RequestCancelled):
                raise RequestCancelled("the run was cancelled", request=self._request) from error
            raise

    def _bounded(self) -> Iterator[bytes]:
        seen = 0
        for chunk in self._inner:
            if len(self._seen.head) < SEEN_BYTES:
                self._seen.head += chunk[: SEEN_BYTES - len(self._seen.head)]
            seen += len(chunk)
            if seen > self._max_bytes:
                raise ResponseTooLarge(
                    f"answer over {self._max_bytes} bytes", request=self._request
                )
            if time.monotonic() >= self._deadline:
                raise _timeout(self._is_run, self._request)
            yield chunk

    @override
    def close(self) -> None:
        self._inner.close()


def _timeout(is_run: bool, request: httpx2.Request) -> httpx2.TimeoutException:
    if is_run:
        return RunDeadlinePassed("the run's wall clock ran out", request=request)
    return httpx2.ReadTimeout("the request took too long in total", request=request)


def bounded_client(transport: BoundedTransport) -> httpx2.Client:
    """An httpx client for an SDK: never follows redirects, no cookies kept between calls."""
    return httpx2.Client(transport=transport, follow_redirects=False)


UNDECODABLE_BODY = (ValueError, RecursionError)
"""What the SDKs raise, unwrapped, for a body they cannot decode: not JSON
(``JSONDecodeError``), not UTF-8 (``UnicodeDecodeError``), an integer past Python's
4300-digit limit (a plain ``ValueError`` from ``int()``, SR-8 C8-3), or nested deeper
than the decoder's recursion limit."""


def bounded_failure(error: Exception, transport: BoundedTransport | None = None) -> Failure | None:
    """How an SDK error caused by this client's bounds, or by a body the SDK cannot
    decode, is settled: not retried; None for any other error. ``transport`` (the one the
    request went through) says what an unreadable answer looked like."""
    if isinstance(error, (*UNDECODABLE_BODY, UnreadableAnswer)):
        seen = transport.seen if transport is not None else None
        return unreadable_answer(seen.describe() if seen is not None else None)
    cause = error.__cause__ or error.__context__
    if isinstance(cause, ResponseTooLarge):
        message = f"the answer was over {MAX_RESPONSE_BYTES} bytes"
        error_ = ProviderError(kind="answer_too_large", message=message)
        return Failure("failed", False, True, None, message, error_)
    if isinstance(cause, RequestCancelled):
        message = "the request was stopped: the run was cancelled"
        error_ = ProviderError(kind="cancelled", message=message)
        return Failure("failed", False, True, None, message, error_)
    if isinstance(cause, RunDeadlinePassed):
        message = "the run's wall clock ran out"
        error_ = ProviderError(kind="timeout", message=message)
        return Failure("timeout", False, True, None, message, error_)
    return None
