"""How the ``repair`` strategy tests a tree: the whole visible suite, or module by module.

A candidate is checked by the visible tests in a verified sandbox; a skip it brings is
not a pass (SR-13 F1). When the original's whole-suite run completes without a report (a
test module ends the runner's process: the 10-task set's malicious-tests task), no tree
could ever pass it, so a right candidate would be thrown away. Then, if the original
collected at most ``module_checks`` modules, each is run on its own (``run_tests`` with
the module as selector, each a verified sandbox run and a recorded tool call); those that
report are the check, the silent ones are named in every reason and left out. This only
chooses which candidate stays: the run's status still comes from the controller's final
whole-suite run (docs/DECISIONS.md, "A suite that never reports").
"""

from __future__ import annotations

from typing import NamedTuple

from sandbox_agent.controller.loop_common import LoopStop
from sandbox_agent.controller.steps import Steps
from sandbox_agent.policy.commands import SELECTORS
from sandbox_agent.tools.contracts import RunTestsArgs
from sandbox_agent.tools.testrun import TestRun


class Checked(NamedTuple):
    """A tree's check: its run (one, or the modules' summed) and the tests it skipped that
    the original runs (none of them is a pass, nor counts as passing for the best tree)."""

    run: TestRun
    new_skips: int


class Check:
    """Test the current tree: the whole suite (the one selector None), or each module that
    reported on the original, against that module's original run."""

    def __init__(self, steps: Steps, original: dict[str | None, TestRun], silent: tuple[str, ...]):
        self._steps = steps
        self._original = original
        """Selector (None: the whole suite) -> the original tree's run of it."""
        self.silent = silent
        """Modules that never reported on the original: not checked."""
        self.baseline = _combined(list(original.values()), silent)
        """The original's run as the strategy sees it (one run, or the modules' summed)."""

    def run(self) -> Checked | LoopStop:
        """Run the check on the workspace as it is now."""
        runs: list[TestRun] = []
        skips: list[str] = []
        for selector, original in self._original.items():
            outcome = self._steps.tool("run_tests", RunTestsArgs(selector=selector))
            if isinstance(outcome, LoopStop):
                return outcome
            run = self._steps.toolbox.test_runs[-1]
            skips += new_skips(original, run)
            runs.append(run)
        run = _combined(runs, self.silent)
        if run.passed and skips:  # a skip is not a pass (SR-13 F1): the next candidate goes on
            run = run.model_copy(update={"passed": False, "reason": _skips_reason(skips)})
        return Checked(run, len(skips))


def whole_suite(steps: Steps, baseline: TestRun) -> Check:
    """The usual check: the whole visible suite."""
    return Check(steps, {None: baseline}, ())


def module_check(steps: Steps, baseline: TestRun, limit: int) -> Check | LoopStop:
    """The check for ``baseline``, the original's whole-suite run: module by module when
    that run completed without a report and a module-by-module check can find the bug
    (the module docstring), else the whole suite."""
    fallback = whole_suite(steps, baseline)
    collect = steps.toolbox.baseline
    if baseline.status != "completed" or baseline.sandbox.runner_report is not None:
        return fallback
    ids = collect.collected() if collect is not None and limit > 0 else None
    modules = module_selectors(baseline.runner, ids or ())
    if not modules or len(modules) > limit:
        return fallback
    original: dict[str | None, TestRun] = {}
    silent: list[str] = []
    for module in modules:
        outcome = steps.tool("run_tests", RunTestsArgs(selector=module))
        if isinstance(outcome, LoopStop):
            return outcome
        run = steps.toolbox.test_runs[-1]
        if outcome.ok and run.sandbox.runner_report is not None:
            original[module] = run
        else:
            silent.append(module)
    if not original:
        return fallback
    check = Check(steps, original, tuple(silent))
    return fallback if check.baseline.passed else check  # passing: the bug is where none reports


def module_selectors(runner: str, ids: tuple[str, ...] | list[str]) -> list[str]:
    """The distinct modules of collected test ids, as ``runner``'s selectors, in order:
    unittest ``pkg.test_mod.Class.test`` -> ``pkg.test_mod``, pytest
    ``pkg/test_mod.py::...`` -> ``pkg/test_mod.py``. An id whose module no allowlisted
    selector can name is left out (so is its module: not checked)."""
    pattern = SELECTORS.get(runner)
    modules: dict[str, None] = {}
    for test in ids:
        if runner == "pytest":
            module = test.split("::", 1)[0]
        else:
            parts = test.split(".")
            module = ".".join(parts[:-2]) if len(parts) > 2 else ""
        if pattern is not None and module and pattern.fullmatch(module):
            modules[module] = None
    return list(modules)


def _combined(runs: list[TestRun], silent: tuple[str, ...]) -> TestRun:
    """One run of several: passed when each passed; counts summed; the evidence (and the
    output a model is shown) of the first that failed, else of the last."""
    if len(runs) == 1 and not silent:
        return runs[0]
    base = next((run for run in runs if not run.passed), runs[-1])
    passed = all(run.passed for run in runs)
    reason = "; ".join(f"{run.selector}: {run.reason}" for run in runs)
    if silent:
        reason += f"; not checked, never reports on its own: {', '.join(silent)}"
    return base.model_copy(
        update={
            "passed": passed,
            "tests_run": sum(run.tests_run for run in runs),
            "failures": sum(run.failures for run in runs),
            "errors": sum(run.errors for run in runs),
            "reason": f"module by module: {reason}"[:2000],
        }
    )


def new_skips(original: TestRun, run: TestRun) -> list[str]:
    """The tests ``run`` skipped that the original's run ran (SR-13 F1): code under test
    that raises a skip turns its failing test into one. The final verdict checks the same
    against the baseline (``tools.baseline``); this stops the search going on with such a
    candidate as its pass. A run that skipped and did not say which: ``["(unnamed)"]``."""
    before, after = original.sandbox.runner_report, run.sandbox.runner_report
    if before is None or after is None or before.ids is None:
        return []
    if after.skipped_ids is None:
        return [UNNAMED] * after.skipped
    ran = set(before.ids) - set(before.skipped_ids or ())
    return [test for test in after.skipped_ids if test in ran]


UNNAMED = "(unnamed)"


def _skips_reason(skipped: list[str]) -> str:
    count = f"{len(skipped)} test{'s' if len(skipped) != 1 else ''}"
    if UNNAMED in skipped:
        return f"the run skipped {count} and did not report which (a skip is not a pass)"
    shown = ", ".join(skipped[:5])
    return f"{count} that the original runs skipped: {shown} (a skip is not a pass)"
