"""The redactor: key shapes, secret environment values, and linear time."""

from __future__ import annotations

import time

import pytest

from sandbox_agent.trace import Redactor
from sandbox_agent.trace.redact import REDACTED


@pytest.mark.parametrize(
    "secret",
    [
        "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv",
        "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx",
        "AKIAIOSFODNN7EXAMPLE",
        "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        "xoxb-123456789012-abcdefghij",
        "Bearer eyJhbGciOiJIUzI1NiJ9.e30.abc",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nxyz\n-----END RSA PRIVATE KEY-----",
        "-----BEGIN OPENSSH PRIVATE KEY-----\ncut short by an output budget",
    ],
)
def test_key_shapes(secret: str) -> None:
    text = Redactor({}).text(f"before {secret} after")
    assert secret not in text
    assert REDACTED in text
    assert text.startswith("before ")


def test_secret_environment_values() -> None:
    env = {"MY_API_KEY": "v3ry-s3cret-value", "DB_PASSWORD": "hunter2hunter2", "HOME": "/root/x"}
    redactor = Redactor(env)
    text = redactor.text("key=v3ry-s3cret-value pw=hunter2hunter2 home=/root/x")
    assert "v3ry-s3cret-value" not in text
    assert "hunter2hunter2" not in text
    assert "/root/x" in text  # not a secret name


def test_short_values_are_not_redacted() -> None:
    assert Redactor({"TOKEN_COUNT": "1"}).text("1 2 3") == "1 2 3"


def test_nested_values() -> None:
    redactor = Redactor({"GH_TOKEN": "abcdefgh12345678"})
    value = {"a": ["x abcdefgh12345678", {"b": "sk-ant-0123456789abc"}], "n": 3}
    assert redactor.value(value) == {"a": [f"x {REDACTED}", {"b": REDACTED}], "n": 3}


def test_linear_time_on_pathological_input() -> None:
    redactor = Redactor({"API_KEY": "a" * 40})
    small = ("sk-" * 20_000) + ("Bearer " * 10_000) + ("-----BEGIN PRIVATE KEY-----" * 2_000)
    large = small * 8

    def best_of_three(text: str) -> float:
        # The fastest of a few runs: one descheduling on a shared machine (~15 ms of
        # work here) must not read as quadratic time.
        timings = []
        for _ in range(3):
            began = time.perf_counter()
            redactor.text(text)
            timings.append(time.perf_counter() - began)
        return min(timings)

    small_s = best_of_three(small)
    large_s = best_of_three(large)
    assert large_s < 2.0
    assert large_s < max(small_s, 0.005) * 40  # ~8x the input, far from quadratic's 64x
