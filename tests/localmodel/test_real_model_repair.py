"""The ``repair`` strategy against the real local server: the contract, not success.

Whatever the 1.5B model writes: a valid terminal status; every model turn a candidate
(tested, refused or denied) or a plain answer; every candidate's test run attested in a
verified sandbox; nothing executed outside the policy; the trace verifies; every ledger
reservation settled; the original intact. Two short candidates keep it to minutes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from real_server import real_server

from sandbox_agent.controller import RunConfig, run_task
from sandbox_agent.controller.models import Budgets, RepairOptions
from sandbox_agent.evidence import verify_run
from sandbox_agent.ledger import Ledger
from sandbox_agent.localmodel import server
from sandbox_agent.providers.options import LocalOptions

pytestmark = [
    pytest.mark.localmodel,
    pytest.mark.docker,
    pytest.mark.slow,
    pytest.mark.timeout(900),
]

SOLUTION = (
    "def largest(numbers):\n"
    '    """The largest of a non-empty list: largest([1, 5, 2]) == 5."""\n'
    "    best = numbers[0]\n"
    "    for number in numbers:\n"
    "        if number < best:\n"
    "            best = number\n"
    "    return best\n"
)
TESTS = (
    "import unittest\n\nfrom solution import largest\n\n\n"
    "class T(unittest.TestCase):\n"
    "    def test_largest(self):\n        assert largest([1, 5, 2]) == 5\n"
)


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[server.ServerRecord]:
    folder = tmp_path_factory.mktemp("model-server")
    with real_server(folder, server.ServerSettings()) as record:
        yield record


def test_the_repair_strategy_keeps_its_contract_with_a_real_model(
    local: server.ServerRecord, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "solution.py").write_text(SOLUTION)
    (repo / "test_solution.py").write_text(TESTS)
    ledger = tmp_path / "ledger.sqlite3"
    result = run_task(
        RunConfig(
            task="Fix the bug in largest.",
            repo=repo,
            provider="local",
            provider_options=LocalOptions(ledger_path=str(ledger)),
            strategy="repair",
            repair=RepairOptions(candidates=2, rounds=0, candidate_tokens=160),
            budgets=Budgets(max_wall_seconds=600),
            trace_dir=tmp_path / "runs",
        )
    )
    assert result.status in ("SUCCEEDED", "FAILED", "BUDGET_EXHAUSTED", "TIMEOUT")
    events = [json.loads(line) for line in Path(result.trace_path).read_text().splitlines()]
    turns = [e for e in events if e["event"] == "model_turn"]
    assert 1 <= len(turns) == result.budget_used.iterations <= 2
    assert all(turn["mode"] == "text" for turn in turns)
    assert len(result.candidates) == len(turns)
    for candidate in result.candidates:
        assert candidate.outcome in ("passed", "failed", "refused")
    runs = [c for c in result.tool_calls if c.tool == "run_tests"]
    assert runs
    assert all(run.result["attested"] for run in runs)
    assert {c.tool for c in result.tool_calls} <= {"run_tests", "read_file", "apply_patch"}
    assert verify_run(Path(result.trace_path).parent).ok
    (spend,) = Ledger(ledger).summary()
    assert spend.open_reservations == 0
    assert result.fixture.intact
    assert (repo / "solution.py").read_text() == SOLUTION
