"""The closed format between the held-out judge and the candidate (issue 15): what goes
in comes out as builtins of exactly the same types, and nothing else decodes."""

from __future__ import annotations

import json
import math
import os
import threading
import time
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sandbox_supervisor import plaindata, remote
from sandbox_supervisor.candidate import Objects, answer

PLAIN = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text()
    | st.binary()
    | st.complex_numbers(allow_nan=False),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=4).map(tuple)
        | st.dictionaries(st.text(max_size=3) | st.integers(), inner, max_size=4)
        | st.frozensets(st.integers() | st.text(max_size=3), max_size=4)
        | st.sets(st.integers(), max_size=4)
    ),
    max_leaves=20,
)


def _same(a: Any, b: Any) -> bool:
    """Equal, with the same types all the way down (and NaN equal to NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


@given(PLAIN)
def test_every_plain_value_round_trips_with_its_exact_type(value: Any) -> None:
    wire = json.dumps({"ok": plaindata.encode(value)}).encode()
    assert _same(plaindata.decode(wire)["ok"], value)


class Sneaky(int):
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = int.__hash__


@pytest.mark.parametrize(
    "value", [Sneaky(1), [Sneaky(1)], type("L", (list,), {})(), object(), len, {"a": object()}]
)
def test_a_subclass_or_an_object_is_not_plain(value: Any) -> None:
    with pytest.raises(plaindata.NotPlain):
        plaindata.encode(value)


@pytest.mark.parametrize(
    "wire",
    [
        b'{"ok": {"$pickle": "gASVAAAA"}}',
        b'{"ok": {"$tuple": [1], "$set": []}}',
        b'{"ok": {"__class__": "os.system"}}',
        b'{"ok": {"$ref": 1}}',  # answers never carry references
        b'{"ok": {"$set": [[1]]}}',
        b'{"ok": {"$dict": [[1]]}}',
        b'{"ok": {"$bytes": "not base64!"}}',
        b'{"ok": {"$float": "1e5"}}',
        b'{"ok": {"$complex": [1]}}',
        b'{"ok": NaN}',
        b'{"ok": 1, "ok": 2, "id": 3, "op": 4, "ok": 5}',
        b'{"ok": ' + b"9" * 5000 + b"}",
        b"[" * 100_000 + b"]" * 100_000,
        b'{"ok": {"$set": [' + b",".join(b"%d" % n for n in range(10_001)) + b"]}}",
        b"\xff\xfe",
        b"",
    ],
)
def test_anything_else_is_a_protocol_error(wire: bytes) -> None:
    with pytest.raises(plaindata.ProtocolError):
        plaindata.decode(wire)


def test_a_reference_decodes_only_on_the_candidates_side() -> None:
    wire = b'{"id": 1, "op": "call", "args": [{"$ref": 2}]}'
    (marker,) = plaindata.decode(wire, refs=True)["args"]
    assert isinstance(marker, plaindata.RefMarker)
    assert marker.number == 2


def test_a_message_over_the_limit_is_refused_before_it_is_read() -> None:
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, plaindata.LENGTH.pack(plaindata.MAX_MESSAGE_BYTES + 1))
        with pytest.raises(plaindata.ProtocolError, match="announced"):
            plaindata.receive(read_end, time.monotonic() + 5)
    finally:
        os.close(read_end)
        os.close(write_end)


def test_an_answer_that_never_comes_fails_at_the_deadline() -> None:
    read_end, write_end = os.pipe()
    try:
        started = time.monotonic()
        with pytest.raises(plaindata.ProtocolError, match="in time"):
            plaindata.receive(read_end, time.monotonic() + 0.2)
        assert time.monotonic() - started < 5
    finally:
        os.close(read_end)
        os.close(write_end)


class Pipes:
    """A judge-side ``Candidate`` talking to a candidate's ``answer`` in a thread."""

    def __init__(self, objects: Objects | None = None, *, reply: Any = None) -> None:
        self.requests = os.pipe()
        self.answers = os.pipe()
        self.objects = objects or Objects()
        self.reply = reply
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()
        self.candidate = remote.Candidate(self.requests[1], self.answers[0], call_timeout_s=2.0)

    def _serve(self) -> None:
        while True:
            try:
                request = plaindata.receive(self.requests[0], refs=True)
            except plaindata.ProtocolError:
                return
            reply = answer(self.objects, request) if self.reply is None else self.reply(request)
            plaindata.send(self.answers[1], reply)

    def close(self) -> None:
        os.close(self.requests[1])
        self.thread.join(5)
        for fd in (self.requests[0], *self.answers):
            os.close(fd)


def test_the_judge_gets_values_and_references_that_refuse_to_be_values() -> None:
    pipes = Pipes()
    try:
        math_module = pipes.candidate.module("math")
        assert math_module.floor(2.5) == 2
        counter = pipes.candidate.module("collections").Counter("aab")
        assert isinstance(counter, remote.Ref)
        assert pipes.candidate.value(pipes.candidate.module("builtins").dict(counter)) == {
            "a": 2,
            "b": 1,
        }
        for refused in (bool, len, iter, hash, int, float):
            with pytest.raises(TypeError, match="not a value"):
                refused(counter)
        with pytest.raises(TypeError, match="not a value"):
            assert counter == {"a": 2, "b": 1}
        assert pipes.candidate.list(pipes.candidate.module("builtins").range(3)) == [0, 1, 2]
        with pipes.candidate.raises("ValueError") as caught:
            math_module.sqrt(-1)
        assert "ArithmeticError" not in caught[0].types
        with pytest.raises(remote.CandidateRaised):
            math_module.sqrt("x")  # a TypeError, not the ValueError a check might expect
    finally:
        pipes.close()


@pytest.mark.parametrize(
    "reply",
    [
        lambda request: {"id": request["id"] + 1, "ok": 1},  # out of step
        lambda request: {"id": True, "ok": 1},  # a bool is not the id
        lambda request: {"id": request["id"], "ok": 1, "ref": 2},  # extra field
        lambda request: {"id": request["id"], "raised": {"types": [1], "message": "x"}},
    ],
    ids=["out of step", "bool id", "extra field", "bad raise"],
)
def test_an_answer_out_of_format_breaks_the_conversation(reply: Any) -> None:
    pipes = Pipes(reply=reply)
    try:
        with pytest.raises(remote.CandidateError):
            pipes.candidate.module("math")
        with pytest.raises(remote.CandidateError, match="gone"):
            pipes.candidate.module("math")
    finally:
        pipes.close()
