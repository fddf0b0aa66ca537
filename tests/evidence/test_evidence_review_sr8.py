"""SR-8 (issue 20) C8-6, found while looking for C8-5's class elsewhere: ``verify`` read
every evidence file whole, whatever its size. A RUN_DIR whose trace (or result, evidence
or diff) was replaced by a huge sparse file crashed ``verify`` (MemoryError) or read it
for minutes. Written against the code before the fix and seen to fail there.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from sandbox_agent.evidence import verify_run

HUGE = 8 * 2**40


@pytest.mark.parametrize("name", ["trace.jsonl", "result.json", "evidence.json", "diff.patch"])
def test_c8_6_a_huge_evidence_file_fails_its_check_by_size(sealed_run: Any, name: str) -> None:
    with (sealed_run.run_dir / name).open("wb") as handle:
        handle.truncate(HUGE)
    outcome: list[object] = []

    def verify() -> None:
        try:
            outcome.append(verify_run(sealed_run.run_dir))
        except BaseException as error:
            outcome.append(error)

    thread = threading.Thread(target=verify, daemon=True)
    thread.start()
    thread.join(60)  # milliseconds expected; bounded so a regression fails, not hangs
    assert not thread.is_alive()
    (report,) = outcome
    assert not isinstance(report, BaseException), report
    assert not report.ok  # type: ignore[attr-defined]
