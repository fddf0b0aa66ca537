"""The spectrum line read back as a hint (``repair.spectrum``) and where its suspects go
among what localisation shows (``repair.localise``)."""

from __future__ import annotations

import json

import pytest

from sandbox_agent.repair.localise import localise_output
from sandbox_agent.repair.spectrum import Suspect, suspects
from sandbox_supervisor.spectrum import MARK

LIB = (
    "def scale(x):\n    return x * 3\n\n\n"
    "def double_all(xs):\n    return [scale(x) for x in xs]\n\n\n"
    "def total(xs):\n    return sum(double_all(xs))\n\n\n"
    "def unrelated(x):\n    return x\n"
)
TESTS = (
    "import unittest\n\nfrom lib import total, unrelated\n\n\n"
    "class T(unittest.TestCase):\n"
    "    def test_total(self):\n        self.assertEqual(total([1, 2]), 6)\n"
)
FAILURE = (
    "F\n======================================================================\n"
    "FAIL: test_total (test_lib.T.test_total)\n"
    "----------------------------------------------------------------------\n"
    "Traceback (most recent call last):\n"
    '  File "/workspace/test_lib.py", line 8, in test_total\n'
    "    self.assertEqual(total([1, 2]), 6)\n"
    "AssertionError: 9 != 6\n"
)


def line(failed: int, passed: int, functions: list[list[object]]) -> str:
    body = {"failed": failed, "passed": passed, "functions": functions}
    return MARK + json.dumps(body)


def test_suspects_are_ranked_by_ochiai() -> None:
    output = "noise\n" + line(2, 8, [["a.py", 1, 2, 8], ["b.py", 5, 2, 0], ["c.py", 9, 1, 0]])
    assert suspects(output) == [
        Suspect("b.py", 5, 1.0),
        Suspect("c.py", 9, 0.707107),
        Suspect("a.py", 1, 0.447214),
    ]


def test_the_last_line_counts() -> None:
    first = line(1, 1, [["a.py", 1, 1, 0]])
    last = line(1, 1, [["b.py", 2, 1, 0]])
    assert suspects(f"{first}\n{last}\n") == [Suspect("b.py", 2, 1.0)]


@pytest.mark.parametrize(
    "text",
    [
        "",
        MARK + "not json",
        MARK + "[]",
        line(0, 3, [["a.py", 1, 1, 0]]),  # more failing runs than failing tests
        line(2, 0, [["a.py", 1, 2, 0]]),  # no passing test: nothing told apart
        line(1, 1, [["a.py", 1, 0, 0]]),  # run by no failing test
        line(1, 1, [["a.py", -1, 1, 0]]),
        line(1, 1, [["a.py", True, 1, 0]]),
        line(1, 1, [["a.py", 1, 1]]),
        line(1, 1, [[1, 1, 1, 0]]),
        line(1, 1, [["a.py", 1, 1, 0]] * 21),
        MARK + json.dumps({"failed": 1, "passed": 1, "functions": [["x" * 5000, 1, 1, 0]]}),
        MARK + "{" + " " * 70_000 + "}",
        # nested past the parser's recursion limit, under the length cap (an outside
        # review's crash of the controller: json.loads raised RecursionError)
        MARK + '{"failed":1,"passed":1,"functions":' + "[" * 30_000 + "]" * 30_000 + "}",
    ],
)
def test_anything_malformed_is_no_hint(text: str) -> None:
    assert suspects(text) == []


def _context(hint: str) -> list[str]:
    files = {"lib.py": LIB, "test_lib.py": TESTS}
    context = localise_output(
        FAILURE, list(files), files.get, lambda path: path.startswith("test_"), hint=hint
    )
    return [site.qualname for site in context.targets]


def test_with_no_frame_in_editable_code_the_spectrum_comes_first() -> None:
    assert _context("") == ["total", "unrelated"]  # what the failing test imports
    spectrum = line(1, 1, [["lib.py", 1, 1, 0], ["lib.py", 5, 1, 0], ["lib.py", 9, 1, 1]])
    assert _context(spectrum) == ["scale", "double_all", "total"]


def test_a_protected_or_unknown_suspect_is_never_shown() -> None:
    spectrum = line(1, 1, [["test_lib.py", 7, 1, 0], ["gone.py", 1, 1, 0], ["lib.py", 99, 1, 0]])
    assert _context(spectrum) == ["total", "unrelated"]


RAISED = (
    "E\n======================================================================\n"
    "ERROR: test_total (test_lib.T.test_total)\n"
    "----------------------------------------------------------------------\n"
    "Traceback (most recent call last):\n"
    '  File "/workspace/test_lib.py", line 8, in test_total\n'
    "    self.assertEqual(total([1, 2]), 6)\n"
    '  File "/workspace/lib.py", line 10, in total\n'
    "    return sum(double_all(xs))\n"
    "TypeError: boom\n"
)


def test_with_frames_the_spectrum_comes_after_them_and_before_callees() -> None:
    files = {"lib.py": LIB, "test_lib.py": TESTS}

    def shown(hint: str) -> list[str]:
        context = localise_output(
            RAISED, list(files), files.get, lambda path: path.startswith("test_"), hint=hint
        )
        return [site.qualname for site in context.targets]

    assert shown("") == ["total", "double_all"]  # where it was raised, then its callee
    spectrum = line(1, 1, [["lib.py", 1, 1, 0], ["lib.py", 5, 1, 0]])
    assert shown(spectrum) == ["total", "scale", "double_all"]
