"""The judge's per-request deadline is a limit with a named default, carried to the judge.

``JudgeRequest.call_timeout_s`` (default ``DEFAULT_JUDGE_CALL_TIMEOUT_S``) reaches the
judge in its input; a candidate slower than it fails the check, and a check that must
wait longer (a probe that walks the whole filesystem under load, issue 21) asks for more.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from judge_harness import judge_on_host, passed

from sandbox_agent.sandbox.base import DEFAULT_JUDGE_CALL_TIMEOUT_S, JudgeRequest
from sandbox_agent.sandbox.docker.spec import judge_input
from sandbox_supervisor import judge, remote

SLOW_IMPORT = "import time\ntime.sleep(1.5)\n\ndef answer():\n    return 42\n"
CHECK = """
import unittest
from sandbox_supervisor.remote import candidate

class Check(unittest.TestCase):
    def test_answer(self):
        self.assertEqual(candidate.module("slow").answer(), 42)
"""


def test_the_default_is_the_same_on_both_sides() -> None:
    assert remote.CALL_TIMEOUT_S == DEFAULT_JUDGE_CALL_TIMEOUT_S
    assert JudgeRequest(module_name="m", source="").call_timeout_s == DEFAULT_JUDGE_CALL_TIMEOUT_S


def _read(text: str) -> dict[str, object]:
    read, write = os.pipe()
    os.write(write, text.encode())
    os.close(write)
    try:
        return judge.read_input(read)
    finally:
        os.close(read)


def test_the_judge_reads_the_deadline_the_host_wrote() -> None:
    request = JudgeRequest(module_name="test_x", source="pass", call_timeout_s=42.5)
    assert _read(judge_input(request)) == {
        "name": "test_x",
        "source": "pass",
        "call_timeout_s": 42.5,
    }


@pytest.mark.parametrize(
    "deadline",
    [
        None,
        0,
        -1,
        "10",
        True,
        float("inf"),
        float("nan"),
        3601,
        pytest.param(10**400, id="10**400"),
    ],
    ids=repr,
)
def test_the_judge_refuses_an_input_without_a_usable_deadline(deadline: object) -> None:
    value: dict[str, object] = {"name": "test_x", "source": "pass"}
    if deadline is not None:
        value["call_timeout_s"] = deadline
    with pytest.raises(ValueError, match="call_timeout_s"):
        _read(json.dumps(value))


@pytest.mark.parametrize("bad", [0, -1, 3601])
def test_the_host_refuses_a_deadline_out_of_range(bad: float) -> None:
    with pytest.raises(ValueError, match="call_timeout_s"):
        JudgeRequest(module_name="m", source="", call_timeout_s=bad)


def test_a_candidate_slower_than_the_deadline_fails_and_a_longer_deadline_passes(
    tmp_path: Path,
) -> None:
    (tmp_path / "slow.py").write_text(SLOW_IMPORT)
    assert not passed(judge_on_host(tmp_path, CHECK, call_timeout_s=0.3))
    assert passed(judge_on_host(tmp_path, CHECK, call_timeout_s=30.0, deadline_s=60.0))
