"""The judge's side of a held-out check: ``candidate``, the code under test in another process.

A held-out module imports ``candidate`` from here and reaches the code under test only
through it::

    from sandbox_supervisor.remote import candidate

    paginator = candidate.module("paginator")
    pages = paginator.Paginator(list(range(1, 26)), per_page=10)  # a Ref: stays there
    assert candidate.list(pages.page(1).items) == list(range(1, 11))  # plain values here
    with candidate.raises("PageNotFound"):
        pages.page(4)

Every attribute, call and conversion is one request to the candidate
(``sandbox_supervisor.candidate``) in the closed format of ``plaindata``. What comes
back is a plain builtin value, built here, or a ``Ref`` to an object that stays there.
A ``Ref`` refuses every operation that would let it stand for a value (truth, equality,
hashing, iteration, numbers, length), so an answer that is not plain data fails the
check instead of passing it. Each request has a deadline; a candidate that hangs,
floods, dies or answers out of format fails the check, and every later request fails
at once.
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

from sandbox_supervisor import plaindata

CALL_TIMEOUT_S = 10.0
"""The longest one request may take (a call into the code under test included), unless
the judge's input asks for another (``JudgeRequest.call_timeout_s``)."""
MAX_CALL_TIMEOUT_S = 3600.0
"""The longest deadline a judge's input may ask for."""
MAX_MESSAGE_CHARS = 500


class CandidateError(AssertionError):
    """The conversation with the candidate broke (timeout, flood, exit, bad answer): the
    check fails. An ``AssertionError``, so unittest counts it as a failure."""


class CandidateRaised(Exception):
    """The code under test raised; ``types`` are the names of its exception's classes,
    most derived first, as the candidate reported them."""

    def __init__(self, types: list[str], message: str) -> None:
        super().__init__(f"{types[0] if types else 'exception'}: {message}")
        self.types = types
        self.message = message


class Ref:
    """An object that stays in the candidate. Attributes and calls go there."""

    __slots__ = ("_candidate", "_number")

    def __init__(self, candidate: Candidate, number: int) -> None:
        object.__setattr__(self, "_candidate", candidate)
        object.__setattr__(self, "_number", number)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return self._candidate.request("getattr", self, name=name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._candidate.request("call", self, args=list(args), kwargs=kwargs)

    def __setattr__(self, name: str, value: Any) -> None:
        raise TypeError("a remote object is read-only from the judge")

    def __repr__(self) -> str:
        return f"<remote object {self._number}>"

    def _refuse(self, *args: Any) -> NoReturn:
        raise TypeError(
            "a remote object is not a value: convert it with candidate.value() or "
            "candidate.list() before comparing or testing it"
        )

    __bool__ = __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _refuse
    __hash__ = __len__ = __iter__ = __contains__ = __index__ = __int__ = _refuse
    __float__ = __add__ = __radd__ = __sub__ = __mul__ = __getitem__ = _refuse


class Candidate:
    """The connection to the candidate process: requests on one pipe, answers on another."""

    def __init__(self, request_fd: int, answer_fd: int, call_timeout_s: float = CALL_TIMEOUT_S):
        self._request_fd = request_fd
        self._answer_fd = answer_fd
        self._timeout_s = call_timeout_s
        self._broken: str | None = None
        self._sequence = 0

    def module(self, name: str) -> Any:
        """Import ``name`` in the candidate (from the code under test); a ``Ref`` to it."""
        return self.request("module", None, name=name)

    def value(self, target: Any) -> Any:
        """``target`` as plain data, or ``CandidateError`` when it has none."""
        return self.request("value", target) if isinstance(target, Ref) else target

    def list(self, target: Any) -> builtins.list[Any]:
        """``list(target)``, computed in the candidate, as plain data."""
        result = self.request("list", target) if isinstance(target, Ref) else list(target)
        if type(result) is not list:
            raise CandidateError(f"list() gave a {type(result).__name__}")
        return result

    @contextmanager
    def raises(self, name: str) -> Iterator[builtins.list[CandidateRaised]]:
        """Expect the code under test to raise an exception with a class called ``name``
        (its own or a base class), as ``assertRaises`` would."""
        caught: builtins.list[CandidateRaised] = []
        try:
            yield caught
        except CandidateRaised as raised:
            if name not in raised.types:
                raise
            caught.append(raised)
            return
        raise AssertionError(f"{name} not raised")

    def close(self) -> None:
        """End the conversation: the candidate reads EOF and exits."""
        self._broken = self._broken or "closed"

    def request(self, op: str, target: Any, **fields: Any) -> Any:
        """Send one request and return its answer (a value or a ``Ref``).

        Raises:
            CandidateRaised: the code under test raised.
            CandidateError: anything else went wrong; the connection is then closed.
        """
        if self._broken is not None:
            raise CandidateError(f"the candidate is gone ({self._broken})")
        self._sequence += 1
        message: dict[str, Any] = {"id": self._sequence, "op": op}
        if isinstance(target, Ref):
            if target._candidate is not self:
                raise CandidateError("a remote object of another candidate")
            message["target"] = target._number
        for key, value in fields.items():
            message[key] = plaindata.encode(value, self._name_ref)
        try:
            plaindata.send(self._request_fd, message)
            answer = plaindata.receive(self._answer_fd, time.monotonic() + self._timeout_s)
        except (OSError, plaindata.ProtocolError, plaindata.NotPlain) as error:
            self._broken = f"{type(error).__name__}: {error}"[:MAX_MESSAGE_CHARS]
            raise CandidateError(f"{op}: {self._broken}") from None
        return self._answer(op, answer)

    def _name_ref(self, value: Any) -> int:
        if isinstance(value, Ref) and value._candidate is self:
            return int(value._number)
        raise plaindata.NotPlain(f"a {type(value).__name__} cannot be sent to the candidate")

    def _answer(self, op: str, answer: Any) -> Any:
        if (
            type(answer) is not dict
            or len(answer) != 2
            or type(answer.get("id")) is not int
            or answer["id"] != self._sequence
        ):
            self._broken = "an answer out of step"
            raise CandidateError(f"{op}: {self._broken}")
        if "ok" in answer:
            return answer["ok"]
        if "ref" in answer and type(answer["ref"]) is int:
            return Ref(self, answer["ref"])
        raised = answer.get("raised")
        if type(raised) is dict and set(raised) == {"types", "message"}:
            types, text = raised["types"], raised["message"]
            if type(types) is list and all(type(t) is str for t in types) and type(text) is str:
                raise CandidateRaised(types[:64], text[:MAX_MESSAGE_CHARS])
        if type(answer.get("error")) is str:
            raise CandidateError(f"{op}: {answer['error'][:MAX_MESSAGE_CHARS]}")
        self._broken = "an answer out of format"
        raise CandidateError(f"{op}: {self._broken}")


candidate: Candidate = None  # type: ignore[assignment]
"""Set by the judge (``sandbox_supervisor.judge``) before it loads the held-out module."""
