"""realrepos' held-out check (``run_held_out_suite``: the project's own suite, its
pristine tests over the final tree) covers what the pristine tree collects, as the
controller's final verdict does (docs/GUARANTEES.md G22's residual, closed here): a
failing test that code under test makes skip is not a held-out pass. Real Docker runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox_agent.evals.running.heldout import run_held_out_suite
from sandbox_agent.sandbox.docker.docker_backend import DockerBackend

pytestmark = pytest.mark.docker

CALC = "def quadruple(x):\n    return 4 * x\n"
SKIPPING = "import unittest\n\ndef quadruple(x):\n    raise unittest.SkipTest('platform')\n"
BUGGY = "def quadruple(x):\n    return 2 * x\n"
TESTS = (
    "import unittest\nfrom pkg.calc import quadruple\n\n"
    "class T(unittest.TestCase):\n"
    "    def test_quadruple(self):\n        self.assertEqual(quadruple(3), 12)\n"
    "    def test_other(self):\n        self.assertTrue(True)\n"
)


def _tree(root: Path, calc: str) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "calc.py").write_text(calc)
    (root / "tests" / "__init__.py").write_text("")
    (root / "tests" / "test_calc.py").write_text(TESTS)
    return root


@pytest.mark.parametrize(
    ("calc", "passed", "says"),
    [
        (CALC, True, "2 tests ran, none failed"),
        (BUGGY, False, "1 failed, 0 errors of 2 tests"),
        (SKIPPING, False, "skipped, which the original runs: tests.test_calc.T.test_quadruple"),
    ],
    ids=["fixed", "buggy", "made-to-skip"],
)
def test_a_held_out_pass_runs_every_test_the_pristine_tree_runs(
    tmp_path: Path, calc: str, passed: bool, says: str
) -> None:
    # Before: a final tree whose code skipped the failing test passed ("2 tests ran,
    # none failed"), as the held-out suite counted only what it ran.
    pristine = _tree(tmp_path / "pristine", CALC)
    final = _tree(tmp_path / "final", calc)
    backend = DockerBackend()
    try:
        result = run_held_out_suite(final, pristine, backend)
    finally:
        backend.close()
    assert result.passed is passed, result.reason
    assert says in result.reason
