"""``fastjson`` gives exactly what ``json`` gives: the same values, the same bytes, errors
where ``json`` has errors (it uses the same C scanner and encoder, without ``re``)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from sandbox_supervisor import fastjson, protocol

VALUES: list[Any] = [
    {"b": 1, "a": [1.5, -0.0, 1e300, 2**70, True, False, None], "é": '\u2028\x00"\\/'},
    {"nested": {"z": {"y": []}, "a": {}}, "emoji": "\U0001f600", "float": 0.1 + 0.2},
    [float("inf"), float("-inf")],
    "just a string",
    12,
    None,
    {"type": "attestation", "checks": [{"name": "uid", "ok": True, "detail": "10001"}]},
]
TEXTS = [
    ' {"a": [1, 2.5, -3e-2, true, false, null], "b": {"c": "\\u00e9\\n"}} \n',
    "[]",
    "  7 ",
    '"\\ud83d\\ude00"',
    '{"a": 1, "a": 2}',
    "[NaN, Infinity, -Infinity]",
    "1e999",
]
JSON_ERRORS = "Expecting|Extra data|Invalid control|BOM"
BAD_TEXTS = ["", "   ", "{", "[1,]", '{"a" 1}', "1 2", "{} x", "\ufeff{}", "'a'", '"\x01"', "nul"]


@pytest.mark.parametrize("value", VALUES)
def test_canonical_bytes_equal_json_dumps(value: Any) -> None:
    want = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    assert fastjson.dumps_canonical(value) == want


def test_canonical_json_of_the_protocol_is_json_dumps() -> None:
    record = VALUES[0]
    want = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    assert protocol.canonical_json(record) == want.encode()


def test_what_json_cannot_encode_is_refused() -> None:
    with pytest.raises(TypeError, match="not JSON serializable"):
        fastjson.dumps_canonical({"a": object()})
    with pytest.raises(TypeError):
        fastjson.dumps_canonical({1.5: "float keys sort badly against str keys", "a": 1})
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="ircular"):
        fastjson.dumps_canonical(loop)


@pytest.mark.parametrize("text", TEXTS)
def test_loads_equals_json_loads(text: str) -> None:
    got, want = fastjson.loads(text), json.loads(text)
    assert repr(got) == repr(want)  # repr: NaN != NaN, but both print as nan


def test_hooks_are_called_like_json_loads() -> None:
    seen: list[str] = []

    def constant(name: str) -> float:
        seen.append(name)
        return math.pi

    pairs = fastjson.loads(
        '{"a": 1, "a": 2, "n": NaN}', object_pairs_hook=list, parse_constant=constant
    )
    assert pairs == [("a", 1), ("a", 2), ("n", math.pi)]
    assert seen == ["NaN"]


@pytest.mark.parametrize("text", BAD_TEXTS)
def test_loads_refuses_what_json_loads_refuses(text: str) -> None:
    with pytest.raises(ValueError, match=JSON_ERRORS):
        json.loads(text)
    with pytest.raises(ValueError, match=JSON_ERRORS):
        fastjson.loads(text)


IN_IMAGE = """
import sys
import sandbox_supervisor.__main__
pid1_modules = sorted(sys.modules)
import json
from sandbox_supervisor import fastjson
values, texts = json.loads(sys.argv[1])
for value in values:
    want = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    assert fastjson.dumps_canonical(value) == want, value
for text in texts:
    assert repr(fastjson.loads(text)) == repr(json.loads(text)), text
print(json.dumps(pid1_modules))
"""


@pytest.mark.docker
def test_in_the_image_fastjson_equals_json_and_pid1_imports_neither_json_nor_re() -> None:
    import docker

    from sandbox_agent.hostsetup import image

    client = docker.from_env(version="1.41", timeout=60)
    try:
        output = client.containers.run(
            image.current_record().image_id,
            ["/usr/bin/python3", "-I", "-S", "-B", "-c", IN_IMAGE, json.dumps([VALUES, TEXTS])],
            network_mode="none",
            read_only=True,
            remove=True,
        )
    finally:
        client.close()
    modules = set(json.loads(output))
    assert "sandbox_supervisor.relay" in modules
    assert modules.isdisjoint({"json", "re", "enum", "typing", "dataclasses", "pathlib"})
