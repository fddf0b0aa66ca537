"""What the runner saw each test do, kept apart from the result objects (an outside review,
2026-12-05: docs/DECISIONS.md, "An outside review of the runner's ``__unittest`` mark").

Code under test shares the runner's process. The tripwire (``tripwire``) sees a replaced
entry point, but the review reached a pass by editing the runner's *objects*: a
``failures`` list whose ``append`` does nothing, ``_outcome.result`` swapped for a dummy,
pytest reports rewritten from ``failed`` to ``passed`` after they were made. So the
runner keeps a ``Ledger`` of its own:

- ``saw``: what its guards saw a test part end with, before unittest's executor or
  pytest's reports turn it into an outcome: an exception (``failed``; under unittest not
  while a failure is expected) or a skip. The guards wrap unittest's
  ``_Outcome.testPartExecutor`` (which also refuses a ``_ShouldStop`` raised by the
  code, SR-13 R1) and pytest's ``call_runtest_hook``; both are installed before any
  repository code is imported and then watched by the tripwire.
- ``told``: the outcomes the runner's own result class (unittest) or report hook
  (pytest) was given, counted there, never read back from the result's lists.

A test whose part failed (or skipped) with no failure, error or skip told for it is
``silenced``: an error of the run. This is a tripwire too, not a proof (code under test
can still find the ledger; SR-2's residual): it makes the few-line forgeries the review
found fail.
"""

from __future__ import annotations

import contextlib
import unittest
from collections.abc import Callable, Iterator
from typing import Any

__unittest = True
"""unittest's mark of its own modules: the guard is a frame in every failure's traceback,
and a failure's traceback must end at the test's own line (see ``run_tests``)."""

FAILED = "failed"
SKIPPED = "skipped"
FAILING_TOLD = frozenset({"failure", "error", "xfail"})
"""What accounts for a part that raised: a failure, an error, or (pytest) an expected
failure (``xfail``: the host still compares its skips with the original's)."""
SKIP_TOLD = FAILING_TOLD | {"skip"}


class StopRaisedByTheCode(AssertionError):
    """unittest's internal stop signal raised by the code under test, not by ``subTest``."""


class Ledger:
    """The runner's own account of a run (the module docstring)."""

    def __init__(self) -> None:
        self._saw: dict[str, str] = {}
        self._told: dict[str, set[str]] = {}
        self.failures = 0
        self.errors = 0
        self.skips = 0
        """Skips told (unittest: one per skipped test or subtest, as its ``skipped`` list)."""
        self._skipped: dict[str, None] = {}

    def saw(self, test_id: str, what: str) -> None:
        """A guard saw a part of ``test_id`` end ``failed`` or ``skipped`` (failed wins)."""
        if self._saw.get(test_id) != FAILED:
            self._saw[test_id] = what

    def told(self, test_id: str, outcome: str) -> None:
        """The result was told ``outcome`` for ``test_id``; failures and errors counted."""
        self._told.setdefault(test_id, set()).add(outcome)
        self.failures += outcome == "failure"
        self.errors += outcome == "error"
        self.skips += outcome == "skip"
        if outcome in ("skip", "xfail"):
            self._skipped[test_id] = None

    @property
    def skipped_ids(self) -> list[str]:
        """The tests a skip (or an expected failure) was told for, in order, once each."""
        return list(self._skipped)

    def failing(self) -> set[str]:
        """The tests a failure or an error was told for."""
        return {test for test, told in self._told.items() if told & {"failure", "error"}}

    def silenced(self) -> list[str]:
        """Tests a guard saw fail or skip that no failure, error or skip was told for."""
        return [
            test_id
            for test_id, what in self._saw.items()
            if not self._told.get(test_id, set()) & (FAILING_TOLD if what == FAILED else SKIP_TOLD)
        ]


def guard_unittest(ledger: Ledger, test_id: Callable[[Any], str]) -> None:
    """Wrap ``unittest.case._Outcome.testPartExecutor``: every part that raises is put in
    ``ledger`` (``test_id`` names its test), and ``unittest.case._ShouldStop`` is an error
    unless ``subTest`` raised it after a recorded failure or expected failure: code under
    test that raised it made its failing test count as passed (SR-13 R1)."""
    outcome_class = unittest.case._Outcome  # type: ignore[attr-defined]
    original = outcome_class.testPartExecutor
    should_stop = unittest.case._ShouldStop  # type: ignore[attr-defined]

    @contextlib.contextmanager
    def test_part_executor(self: Any, test_case: Any, subTest: bool = False) -> Iterator[None]:
        # whether a failure is expected: as ``TestCase.run`` set the flag before the part,
        # and as the test's decorator says; code under test can reach ``_outcome`` from its
        # frame and set the flag while a part runs (the failure is then swallowed and
        # ``run`` reports a plain success), or before a subtest's part
        expecting = bool(self.expecting_failure) and _expects_failure(test_case)
        with original(self, test_case, subTest):
            try:
                yield
            except should_stop:
                if self.success and self.expectedFailure is None:
                    ledger.saw(test_id(test_case), FAILED)
                    raise StopRaisedByTheCode(
                        "unittest's internal _ShouldStop was raised by the code under test"
                    ) from None
                raise
            except unittest.SkipTest:
                ledger.saw(test_id(test_case), SKIPPED)
                raise
            except KeyboardInterrupt:
                raise
            except BaseException:
                if not expecting:
                    ledger.saw(test_id(test_case), FAILED)
                raise

    outcome_class.testPartExecutor = test_part_executor


def _expects_failure(test_case: Any) -> bool:
    """Whether ``test_case`` (or a subtest's test) is marked ``expectedFailure``, as
    ``TestCase.run`` reads it."""
    test = getattr(test_case, "test_case", test_case)
    method = getattr(test, getattr(test, "_testMethodName", ""), None)
    return bool(
        getattr(test, "__unittest_expecting_failure__", False)
        or getattr(method, "__unittest_expecting_failure__", False)
    )


def guard_pytest(ledger: Ledger, test_id: Callable[[str], str]) -> None:
    """Wrap ``_pytest.runner.call_and_report`` and ``CallInfo.from_call`` (both in every
    pytest the runner meets): a setup, call or teardown that raised is put in ``ledger``
    (a skip as such), whatever report pytest then makes of it."""
    import _pytest.runner
    from _pytest.outcomes import Skipped

    call_info = _pytest.runner.CallInfo
    original_call = call_info.from_call.__func__  # type: ignore[attr-defined]
    original_report = _pytest.runner.call_and_report
    outermost: list[Any] = []
    """The calls that ended at depth 0: the first is pytest's own around the test part
    (calls the test itself makes end inside it, deeper; a hook's come after it)."""
    depth = [0]

    def from_call(cls: Any, *args: Any, **kwargs: Any) -> Any:
        depth[0] += 1
        try:
            call = original_call(cls, *args, **kwargs)
        finally:
            depth[0] -= 1
        if depth[0] == 0:
            outermost.append(call)
        return call

    def call_and_report(item: Any, when: Any, log: bool = True, **kwds: Any) -> Any:
        del outermost[:]
        report = original_report(item, when, log, **kwds)
        excinfo = outermost[0].excinfo if outermost else None
        del outermost[:]
        if excinfo is not None:
            ledger.saw(test_id(item.nodeid), SKIPPED if excinfo.errisinstance(Skipped) else FAILED)
        return report

    call_info.from_call = classmethod(from_call)  # type: ignore[assignment]
    _pytest.runner.call_and_report = call_and_report
