"""The closed format every value takes between the judge and the candidate (issue 15).

A held-out check runs in the trusted judge; the code under test runs in another process
(the candidate) and is reached only through messages in this format. A message is a
4-byte big-endian length and that many bytes of JSON: an object of named fields
(``ENVELOPE_KEYS``, each at most once) whose values are JSON's (``null``, booleans,
integers, finite numbers, strings, arrays as lists), and where every other JSON object
is a *tag* with exactly one key:

==================  ================================================
``{"$tuple": [...]}``       a tuple
``{"$dict": [[k, v], ...]}`` a dict (any hashable keys, insertion order)
``{"$set": [...]}``         a set; ``{"$frozenset": [...]}`` a frozenset
``{"$bytes": "base64"}``    bytes
``{"$float": "nan"}``       ``nan``, ``inf`` or ``-inf``
``{"$complex": [re, im]}``  a complex number
``{"$ref": n}``             an object that stays in the candidate (requests only)
==================  ================================================

Nothing else decodes: no pickle, no class name that picks what to construct, no live
object. The judge builds builtin values only, so whatever the candidate sends can be
wrong, never clever (an ``__eq__`` of its own, a patched builtin). Decoding is bounded:
``MAX_MESSAGE_BYTES`` per message, JSON's own nesting limit, Python's digit limit on
integers; anything out of bounds is a ``ProtocolError``.

Standard library only: this module runs inside the container, in both processes.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import os
import select
import struct
import time
from typing import Any

LENGTH = struct.Struct(">I")
MAX_MESSAGE_BYTES = 8 * 1024 * 1024
"""One message, either way; a longer one ends the conversation (a flood is no answer)."""
MAX_HASHED_MEMBERS = 10_000
"""Members of one set or keys of one dict: a set of colliding hashes costs quadratic time
to build, so larger ones are refused instead of left to the request's deadline."""
MAX_DEPTH = 200
"""Nesting of an encoded value; deeper is not plain data."""
TAGS = frozenset({"$tuple", "$dict", "$set", "$frozenset", "$bytes", "$float", "$complex", "$ref"})
ENVELOPE_KEYS = frozenset(
    {
        "id",
        "op",
        "target",
        "name",
        "args",
        "kwargs",
        "ok",
        "ref",
        "raised",
        "error",
        "types",
        "message",
    }
)
"""The field names of requests and answers (``remote``, ``candidate``): the only JSON
objects besides tags, and never values (the encoder writes every dict as ``$dict``)."""
_SPECIAL_FLOATS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


class ProtocolError(ValueError):
    """A message that is not in the format, too long, too deep, or cut short."""


class NotPlain(TypeError):
    """A value with no plain encoding (the candidate then sends a reference instead)."""


class RefMarker:
    """A decoded ``{"$ref": n}``: the caller turns it into its own reference object."""

    __slots__ = ("number",)

    def __init__(self, number: int) -> None:
        self.number = number

    def __repr__(self) -> str:
        return f"RefMarker({self.number})"


def encode(value: Any, refer: Any = None, depth: int = 0) -> Any:
    """``value`` as JSON-ready data; ``refer(obj) -> int`` names an object that is not
    plain (without it, such an object raises ``NotPlain``). Exact types only: a
    subclass of ``int`` or ``list`` is not plain, whatever it claims."""
    if depth > MAX_DEPTH:
        raise NotPlain("nested too deep")
    kind = type(value)
    if value is None or kind is bool or kind is int or kind is str:
        return value
    if kind is float:
        if math.isfinite(value):
            return value
        return {"$float": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
    if kind is list:
        return [encode(item, refer, depth + 1) for item in value]
    if kind is tuple:
        return {"$tuple": [encode(item, refer, depth + 1) for item in value]}
    if kind is dict:
        items = [
            [encode(k, refer, depth + 1), encode(v, refer, depth + 1)] for k, v in value.items()
        ]
        return {"$dict": items}
    if kind is set or kind is frozenset:
        tag = "$set" if kind is set else "$frozenset"
        return {tag: [encode(item, refer, depth + 1) for item in value]}
    if kind is bytes:
        return {"$bytes": base64.b64encode(value).decode("ascii")}
    if kind is complex:
        return {
            "$complex": [encode(value.real, None, depth + 1), encode(value.imag, None, depth + 1)]
        }
    if refer is None:
        raise NotPlain(f"a {kind.__name__} is not plain data")
    return {"$ref": refer(value)}


def _real(value: Any) -> float:
    if type(value) in (int, float):  # a nested {"$float": ...} is already a float here
        return float(value)
    raise ProtocolError("a complex part must be a number")


def _tag(pairs: list[tuple[str, Any]], *, refs: bool) -> Any:
    keys = [key for key, _ in pairs]
    if len(set(keys)) == len(keys) and ENVELOPE_KEYS.issuperset(keys):
        return dict(pairs)  # a request's or an answer's fields
    if len(pairs) != 1 or pairs[0][0] not in TAGS or (pairs[0][0] == "$ref" and not refs):
        raise ProtocolError(f"not a tag: {keys[:3]!r}")
    tag, body = pairs[0]
    if tag == "$float":
        if body not in _SPECIAL_FLOATS:
            raise ProtocolError("$float must be nan, inf or -inf")
        return _SPECIAL_FLOATS[body]
    if tag == "$bytes":
        if type(body) is not str:
            raise ProtocolError("$bytes must be a base64 string")
        try:
            return base64.b64decode(body.encode("ascii"), validate=True)
        except (binascii.Error, UnicodeEncodeError):
            raise ProtocolError("$bytes is not base64") from None
    if tag == "$ref":
        if type(body) is not int or body < 0:
            raise ProtocolError("$ref must be a number")
        return RefMarker(body)
    if type(body) is not list:
        raise ProtocolError(f"{tag} must hold a list")
    if tag in ("$set", "$frozenset", "$dict") and len(body) > MAX_HASHED_MEMBERS:
        raise ProtocolError(f"{tag} of {len(body)} members, more than {MAX_HASHED_MEMBERS}")
    try:
        if tag == "$tuple":
            return tuple(body)
        if tag == "$set":
            return set(body)
        if tag == "$frozenset":
            return frozenset(body)
        if tag == "$complex":
            if len(body) != 2:
                raise ProtocolError("$complex holds two numbers")
            return complex(_real(body[0]), _real(body[1]))
        if not all(type(pair) is list and len(pair) == 2 for pair in body):
            raise ProtocolError("$dict holds [key, value] pairs")
        return {key: value for key, value in body}
    except TypeError as error:  # an unhashable key or member (a list in a set)
        raise ProtocolError(f"{tag}: {error}") from None


def _no_constants(name: str) -> Any:
    raise ProtocolError(f"bare {name} (non-finite floats are tagged)")


def decode(data: bytes, *, refs: bool = False) -> Any:
    """One message's value, built from builtins only (and ``RefMarker`` with ``refs``:
    the candidate's side, where the judge names objects it was given).

    Raises:
        ProtocolError: not UTF-8 JSON in this format, or past a bound.
    """
    if len(data) > MAX_MESSAGE_BYTES:
        raise ProtocolError(f"message of {len(data)} bytes")

    def tag(pairs: list[tuple[str, Any]]) -> Any:
        return _tag(pairs, refs=refs)

    try:
        return json.loads(data.decode("utf-8"), object_pairs_hook=tag, parse_constant=_no_constants)
    except ProtocolError:
        raise
    except Exception as error:
        raise ProtocolError(f"not a message: {type(error).__name__}") from None


def dumps(message: Any) -> bytes:
    """A message (already encoded with ``encode``) with its length prefix.

    Raises:
        ProtocolError: longer than ``MAX_MESSAGE_BYTES``, or not JSON (an integer past
            Python's digit limit).
    """
    try:
        data = json.dumps(message, allow_nan=False, separators=(",", ":")).encode("utf-8")
    except (ValueError, RecursionError) as error:
        raise ProtocolError(f"cannot encode: {error}") from None
    if len(data) > MAX_MESSAGE_BYTES:
        raise ProtocolError(f"message of {len(data)} bytes, more than {MAX_MESSAGE_BYTES}")
    return LENGTH.pack(len(data)) + data


def send(fd: int, message: Any) -> None:
    """Write one message, whole (blocking).

    Raises:
        ProtocolError: see ``dumps``.
        OSError: the other end is gone.
    """
    view = memoryview(dumps(message))
    while view:
        view = view[os.write(fd, view) :]


def receive(fd: int, deadline: float | None = None, *, refs: bool = False) -> Any:
    """Read one message from ``fd`` by ``deadline`` (a ``time.monotonic()``; None: wait).

    Raises:
        ProtocolError: cut short, too long, malformed, or not whole by the deadline.
    """
    (length,) = LENGTH.unpack(_read_exactly(fd, LENGTH.size, deadline))
    if length > MAX_MESSAGE_BYTES:
        raise ProtocolError(f"message of {length} bytes announced")
    return decode(_read_exactly(fd, length, deadline), refs=refs)


def _read_exactly(fd: int, size: int, deadline: float | None) -> bytes:
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP)
    data = bytearray()
    while len(data) < size:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not poller.poll(math.ceil(left * 1000)):
                if time.monotonic() >= deadline:
                    raise ProtocolError("no whole answer in time")
                continue
        chunk = os.read(fd, min(size - len(data), 1 << 20))
        if not chunk:
            raise ProtocolError("the other side closed")
        data += chunk
    return bytes(data)
