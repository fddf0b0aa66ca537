"""sandbox_agent.canonical: the host's one canonical JSON, and PID 1's own copy of it
(``sandbox_supervisor.protocol.canonical_json``, stdlib only) give the same bytes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sandbox_agent.canonical import canonical_json
from sandbox_supervisor import protocol

VALUES: list[Any] = [
    {"b": 1, "a": [1.5, -0.0, 1e300, 2**70, True, False, None], "é": '\u2028\x00"\\/'},
    {"nested": {"z": {"y": []}, "a": {}}, "emoji": "\U0001f600", "float": 0.1 + 0.2},
    {"type": "attestation", "checks": [{"name": "uid", "ok": True, "detail": "10001"}]},
    {"v": 1, "files": [{"path": "pkg/__init__.py", "size": 0, "sha256": "e3b0" * 16}]},
    {"argv": ["python3", "-m", "unittest"], "deadline_s": 60.0, "go_timeout_s": 30},
    {"10": "ten", "9": "nine", "A": 1, "a": 2, "_": 3},
    [],
    {},
    "just a string",
    "",
    12,
    -7.25,
    None,
]


@pytest.mark.parametrize("value", VALUES)
def test_the_host_and_pid1_encode_alike(value: Any) -> None:
    assert canonical_json(value) == protocol.canonical_json(value)


@pytest.mark.parametrize("value", VALUES)
def test_the_encoding_is_sorted_compact_ascii_json(value: Any) -> None:
    text = canonical_json(value)
    assert json.loads(text) == value
    assert text == json.dumps(value, sort_keys=True, separators=(",", ":")).encode("ascii")


@pytest.mark.parametrize("value", [float("nan"), {"a": float("inf")}, [float("-inf")]])
def test_what_is_not_json_is_refused_on_the_host(value: Any) -> None:
    with pytest.raises(ValueError, match="JSON compliant"):
        canonical_json(value)
