"""scripts/soak.py (issue 21): every run's outcome is kept, as it is made, and a failure says
which test failed in which run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from sandbox_agent.settings import PROJECT_ROOT

SCRIPT = PROJECT_ROOT / "scripts" / "soak.py"


def _soak(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_a_failed_run_is_named_and_the_summary_holds_every_run(tmp_path: Path) -> None:
    # A test that fails on its second run only: the soak must say which run failed it.
    (tmp_path / "test_sample.py").write_text(
        "from pathlib import Path\n"
        "def test_passes():\n    pass\n"
        "def test_fails_the_second_time():\n"
        "    seen = Path('seen')\n"
        "    first = not seen.exists()\n"
        "    seen.touch()\n"
        "    assert first\n"
    )
    done = _soak(tmp_path, "--runs", "2", "--load", "0", "--", "test_sample.py")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "soak run 1/2: 2 passed" in done.stdout
    assert "soak run 2/2: 1 failed, 1 passed" in done.stdout
    assert "  failed: test_sample.py::test_fails_the_second_time" in done.stdout
    summary = json.loads((tmp_path / ".soak" / "summary.json").read_text())
    assert (summary["runs"], summary["planned"], summary["failures"]) == (2, 2, 1)
    assert summary["commit"] is None  # not a git checkout
    assert [run["failed"] for run in summary["detail"]] == [
        [],
        ["test_sample.py::test_fails_the_second_time"],
    ]
    assert (tmp_path / ".soak" / "run-2.log").read_text().count("FAILED") == 1
    assert not (tmp_path / ".soak" / "summary.json.partial").exists()


def test_the_random_order_prints_each_runs_seed(tmp_path: Path) -> None:
    (tmp_path / "test_sample.py").write_text("def test_a():\n    pass\n")
    done = _soak(
        tmp_path, "--runs", "2", "--load", "0", "--order", "random", "--seed", "7",
        "--", "test_sample.py",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "soak run 1/2 seed 7: 1 passed" in done.stdout
    assert "soak run 2/2 seed 8: 1 passed" in done.stdout
    summary = json.loads((tmp_path / ".soak" / "summary.json").read_text())
    assert [run["seed"] for run in summary["detail"]] == [7, 8]


def test_nonsense_counts_are_refused_in_one_line(tmp_path: Path) -> None:
    done = _soak(tmp_path, "--runs", "0")
    assert done.returncode == 2
    assert "--runs must be at least 1" in done.stderr
    assert not (tmp_path / ".soak").exists()
