"""Provider failures a user can act on: what failed, where, and what to check.

Every failure of a real provider ends as one ``ProviderError``: its kind, the HTTP status
and the API's error type when there was an answer, and one bounded, redacted line of
message (the API's own words, or the connection failure: ``connection refused at
127.0.0.1:9``). It is kept in the trace (``provider_error`` events) and in the run's
result, and shown by the CLI and the viewer (issue 30).

Nothing here copies text unbounded or unredacted: the API's message passes through the
trace's redactor (key shapes and the values of secret-looking environment variables)
before it is cut to one line of ``MAX_MESSAGE_CHARS``.
"""

from __future__ import annotations

import errno
import re
import socket
import unicodedata
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, field_validator

from sandbox_agent.errors import InfrastructureError

ProviderErrorKind = Literal[
    "http_status",  # the API answered with an HTTP error status
    "connection",  # no answer: refused, unresolvable, reset, closed without an answer
    "timeout",  # no whole answer within the request's time (--request-timeout)
    "unreadable_answer",  # an answer that is not the API's (not JSON, wrong shape)
    "answer_too_large",
    "cancelled",  # the run was cancelled during the request
    "server_gone",  # the local model server died
    "other",
]
MAX_MESSAGE_CHARS = 300
MAX_TYPE_CHARS = 64
SNIPPET_CHARS = 80
"""Characters of an unreadable answer shown in its message."""
_SAFE_TYPE = re.compile(r"[A-Za-z0-9_.\-]{1,64}\Z")


class ProviderError(BaseModel):
    """A provider's failure as the result and the trace keep it (bounded, redacted)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: ProviderErrorKind
    http_status: int | None = None
    """The status of the API's answer, when there was one."""
    type: str | None = Field(None, max_length=MAX_TYPE_CHARS)
    """The API's own error type (``authentication_error``, ``rate_limit_error``, ...)."""
    message: str
    """One line: the API's message or the failure, with what to check."""

    @field_validator("message")
    @classmethod
    def _one_line(cls, value: str) -> str:
        return one_line(value)

    def line(self) -> str:
        """The whole failure in one line, as the CLI shows it."""
        if self.kind != "http_status" or self.http_status is None:
            return self.message
        head = f"HTTP {self.http_status}" + (f" {self.type}" if self.type else "")
        return f"{head}: {self.message}" if self.message else head


class ProviderFailed(InfrastructureError):
    """A model request failed for good (after its retries, if it had any).

    Attributes:
        error: what failed, for the trace and the result.
        attempts: how many times the request was sent.
    """

    def __init__(self, provider: str, error: ProviderError, attempts: int) -> None:
        super().__init__(f"{provider} API: {error.line()} (gave up after {attempts} attempt(s))")
        self.error = error
        self.attempts = attempts


class RetryNotice(NamedTuple):
    """A failed attempt that will be sent again after ``wait_seconds``."""

    attempt: int
    """The attempt that failed (1 for the first)."""
    retries: int
    """Retries allowed in all."""
    wait_seconds: float
    error: ProviderError


def one_line(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``text`` on one line, without control or format characters, at most ``limit``."""
    printable = "".join(
        " " if unicodedata.category(char) in ("Cc", "Cf", "Cs", "Zl", "Zp") else char
        for char in text
    )
    line = " ".join(printable.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def clean_line(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``text`` redacted, then on one line (``one_line``): redacted before it is cut, so
    a secret across the cut cannot leave a recognisable part behind."""
    from sandbox_agent.trace.redact import Redactor

    return one_line(Redactor().text(text), limit)


def error_type(body: object) -> str | None:
    """The API's error type from a decoded error body (both APIs' shapes), if it is a
    plain identifier."""
    inner = body.get("error", body) if isinstance(body, dict) else None
    value = inner.get("type") if isinstance(inner, dict) else None
    if not isinstance(value, str) or not _SAFE_TYPE.match(value):
        return None
    return value


def error_message(body: object) -> str:
    """The API's error message from a decoded error body, or the body's text."""
    inner = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(inner, dict):
        message = inner.get("message")
        return message if isinstance(message, str) else ""
    return inner if isinstance(inner, str) else ""


def http_status_error(status: int, body: object, *, key_env: str) -> ProviderError:
    """An HTTP error answer: its status, the API's type and message, and what to check."""
    hint = ""
    if status in (401, 403):
        hint = f"check {key_env}"
    elif status == 404:
        hint = "check --model and --base-url"
    elif 300 <= status < 400:
        hint = "redirects are not followed: check --base-url"
    message = clean_line(error_message(body), MAX_MESSAGE_CHARS - len(hint) - 3)
    if hint:
        message = f"{message} ({hint})" if message else hint
    return ProviderError(
        kind="http_status", http_status=status, type=error_type(body), message=message
    )


def where(error: BaseException) -> str:
    """``host:port`` of the request an SDK or httpx error is about; ``""`` if unknown."""
    for link in _chain(error):
        request = _request_of(link)
        url = getattr(request, "url", None)
        host = getattr(url, "host", None)
        if host:
            port = getattr(url, "port", None)
            if port is None:
                port = 443 if getattr(url, "scheme", "") == "https" else 80
            return f"{host}:{port}"
    return ""


def _request_of(error: BaseException) -> object:
    try:
        return getattr(error, "request", None)
    except RuntimeError:  # httpx raises when an error has no request attached
        return None


def _chain(error: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in seen and len(seen) < 16:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


REFUSED_ERRNOS = frozenset({errno.ECONNREFUSED})
UNREACHABLE_ERRNOS = frozenset({errno.ENETUNREACH, errno.EHOSTUNREACH, errno.EADDRNOTAVAIL})


def connection_error(error: BaseException, *, timed_out: bool) -> ProviderError:
    """A request that got no answer, described from its cause: refused, not resolved,
    unreachable, reset, closed, or timed out, and where."""
    at = where(error)
    suffix = f" at {at}" if at else ""
    for link in _chain(error):
        if isinstance(link, socket.gaierror):
            host = at.rsplit(":", 1)[0] if at else "the host"
            return ProviderError(
                kind="connection", message=f"{host} could not be resolved (check --base-url)"
            )
        if isinstance(link, OSError) and link.errno in REFUSED_ERRNOS:
            return ProviderError(
                kind="connection",
                message=f"connection refused{suffix} (is the server running? check --base-url)",
            )
        if isinstance(link, OSError) and link.errno in UNREACHABLE_ERRNOS:
            return ProviderError(kind="connection", message=f"no route{suffix}")
        if isinstance(link, ConnectionResetError):
            return ProviderError(kind="connection", message=f"connection reset{suffix}")
    if timed_out:
        return ProviderError(kind="timeout", message=f"no answer in time{suffix}")
    names = {type(link).__name__ for link in _chain(error)}
    if "RemoteProtocolError" in names:
        return ProviderError(
            kind="connection", message=f"the server closed the connection without an answer{suffix}"
        )
    return ProviderError(kind="connection", message=f"connection failed{suffix}")


def refused_connection(error: BaseException) -> bool:
    """A refused or unresolvable connection: an answer from the network that nothing
    listens there, so a retry would only delay the message (docs/DECISIONS.md)."""
    return any(
        isinstance(link, socket.gaierror)
        or (isinstance(link, OSError) and link.errno in REFUSED_ERRNOS)
        for link in _chain(error)
    )


def unreadable_error(seen: str | None = None) -> ProviderError:
    """An answer the SDK could not read; ``seen`` describes it when the transport saw it."""
    message = "the API's answer could not be read"
    if seen:
        message = f"{message}: {seen}"
    return ProviderError(kind="unreadable_answer", message=clean_line(message))


def snippet(data: bytes) -> str:
    """The first characters of an answer's body, redacted, on one line, quoted."""
    text = clean_line(data.decode("utf-8", "replace"), SNIPPET_CHARS)
    return repr(text) if text else "an empty body"


def other_error(error: BaseException) -> ProviderError:
    """Any other failure: its type and its (redacted, bounded) text."""
    return ProviderError(kind="other", message=clean_line(f"{type(error).__name__}: {error}"))


def describe(error: BaseException) -> ProviderError:
    """Any provider failure as a ``ProviderError``: a request's own, a local server that
    died (how it ended and where its log is), or another error's type and text."""
    from sandbox_agent.errors import ModelServerGone

    if isinstance(error, ProviderFailed):
        return error.error
    if isinstance(error, ModelServerGone):
        facts = error.diagnostics
        ended = facts.get("ended")
        how = f" ({ended})" if isinstance(ended, str) and ended else ""
        log = f"; its log: {facts['log_file']}" if facts.get("log_file") else ""
        return ProviderError(kind="server_gone", message=clean_line(f"{error}{how}{log}"))
    return other_error(error)
