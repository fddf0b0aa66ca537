"""The runner's spectrum line, read back as a localisation hint (``sandbox_supervisor.spectrum``).

``run_tests RUNNER --spectrum`` prints, once, which functions of the repository the
failing tests ran and how many passing tests ran them too. That line is part of the
run's output, which code under test can write to as well: it is parsed here as
untrusted data (the last such line, bounded in length and shape; anything else is no
hint) and only ever ranks what the model is shown. A function run by every failing test
and no passing one scores 1 (Ochiai's measure, ``f / sqrt(F * (f + p))``). With no
passing test at all (a HumanEvalFix row's one docstring test) every function the tests
ran scores alike: that is no hint either, and what is shown stays as without one.
"""

from __future__ import annotations

import json
import math
from typing import NamedTuple

from sandbox_supervisor.spectrum import MARK, MAX_FUNCTIONS

MAX_LINE_CHARS = 64 * 1024
MAX_COUNT = 10**9


class Suspect(NamedTuple):
    """A function the failing tests ran: where it starts and how suspicious it is."""

    path: str
    line: int
    score: float


def suspects(output: str) -> list[Suspect]:
    """The spectrum in ``output``, most suspicious first; [] when there is none to trust."""
    found = [line for line in output.splitlines() if line.startswith(MARK)]
    if not found or len(found[-1]) > MAX_LINE_CHARS:
        return []
    try:
        body = json.loads(found[-1][len(MARK) :])
    except (ValueError, RecursionError, MemoryError):  # nested past the parser's limit
        return []
    if not isinstance(body, dict) or not _count(body.get("failed")):
        return []
    if not _count(body.get("passed")) or body["passed"] == 0:
        return []  # no passing test to tell the failing tests' functions apart by
    failed = body["failed"]
    rows = body.get("functions")
    if not isinstance(rows, list) or len(rows) > MAX_FUNCTIONS:
        return []
    ranked: list[Suspect] = []
    for row in rows:
        if not (isinstance(row, list) and len(row) == 4 and isinstance(row[0], str)):
            return []
        path, line, ran_failing, ran_passing = row
        if not all(_count(n) for n in (line, ran_failing, ran_passing)) or ran_failing == 0:
            return []
        if ran_failing > failed or not 0 < len(path) <= 4096:
            return []
        score = ran_failing / math.sqrt(failed * (ran_failing + ran_passing))
        ranked.append(Suspect(path, line, round(score, 6)))
    return sorted(ranked, key=lambda s: -s.score)


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT
