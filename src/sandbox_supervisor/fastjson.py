"""JSON through CPython's C accelerator ``_json`` directly, without importing ``json``.

Why: ``json``'s Python layer imports ``re`` (and with it ``enum``, ``functools`` and
``collections``): ~9 ms of PID 1's start-up under runc and ~15 ms under gVisor, on
every sandbox run (issue 3). The scanner and encoder used here are the very C objects
that ``json.loads`` and ``json.dumps`` use on CPython 3.11 (``json.decoder.JSONDecoder``
and ``json.encoder.JSONEncoder.iterencode`` call ``c_make_scanner``/``c_make_encoder``
with the same arguments), so values and bytes are identical; the tests compare them
with ``json`` on the host and in the image. Only the two thin wrappers are ours.
"""

from __future__ import annotations

import _json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

JSON_WHITESPACE = " \t\n\r"
"""What ``json.loads`` skips before and after the value."""
_CONSTANTS = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}


class _Decoder:
    """The attributes ``_json.make_scanner`` reads: those of a default ``json.JSONDecoder``."""

    __slots__ = (
        "object_hook",
        "object_pairs_hook",
        "parse_constant",
        "parse_float",
        "parse_int",
        "strict",
    )

    def __init__(
        self,
        object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None,
        parse_constant: Callable[[str], Any],
    ) -> None:
        self.strict = True
        self.object_hook = None
        self.object_pairs_hook = object_pairs_hook
        self.parse_float = float
        self.parse_int = int
        self.parse_constant = parse_constant


def _skip_whitespace(text: str, index: int) -> int:
    while index < len(text) and text[index] in JSON_WHITESPACE:
        index += 1
    return index


def loads(
    text: str,
    *,
    object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None,
    parse_constant: Callable[[str], Any] = _CONSTANTS.__getitem__,
) -> Any:
    """``json.loads(text, object_pairs_hook=..., parse_constant=...)`` for a ``str``.

    Raises:
        ValueError: ``text`` is not exactly one JSON value (the scanner's own errors are
            ``json.JSONDecodeError``, a ``ValueError``); whatever a hook raises.
    """
    # typeshed types the context as the scanner itself; the C code reads only attributes.
    scan = _json.make_scanner(_Decoder(object_pairs_hook, parse_constant))  # type: ignore[arg-type]
    start = _skip_whitespace(text, 0)
    try:
        value, end = scan(text, start)
    except StopIteration as stop:
        raise ValueError(f"Expecting value: char {stop.value}") from None
    if _skip_whitespace(text, end) != len(text):
        raise ValueError(f"Extra data: char {end}")
    return value


def _not_serializable(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def dumps_canonical(value: object) -> str:
    """``json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)``.

    Raises:
        TypeError: a value JSON cannot hold.
        ValueError: a circular reference.
    """
    encode = _json.make_encoder(
        {},  # markers: circular references are errors, as with check_circular=True
        _not_serializable,
        _json.encode_basestring_ascii,
        None,  # indent
        ":",
        ",",
        True,  # sort_keys
        False,  # skipkeys
        True,  # allow_nan
    )
    return "".join(encode(value, 0))
