"""A tripwire on the test runner's own machinery (SR-2 in docs/SECURITY_REVIEW.md).

Code under test runs in the runner's interpreter, so it can replace the runner's
entry points (``unittest.TestCase.run`` that always reports success, say). Before
any repository code is imported, ``Snapshot.take`` records the identity of every
function the verdict depends on; ``Snapshot.changed`` names those replaced since.
A changed runner fails the run.

This is a tripwire, not a proof: code that writes a forged report on the report
pipe and leaves with ``os._exit`` is not caught here (the host-side limits of that
are in docs/TOOLS.md and docs/THREAT_MODEL.md). It does turn the simplest, most
general forgery into a failed run.
"""

from __future__ import annotations

import importlib
from typing import Any, NamedTuple

UNITTEST_ENTRY_POINTS: tuple[tuple[str, str, str], ...] = (
    *(
        ("unittest", owner, name)
        for owner, names in (
            ("TestCase", ("run", "__call__", "debug", "_callTestMethod", "_callSetUp")),
            ("TestSuite", ("run", "__call__", "_handleClassSetUp", "_tearDownPreviousClass")),
            (
                "TestResult",
                ("startTest", "stopTest", "addSuccess", "addFailure", "addError", "addSkip",
                 "addExpectedFailure", "addUnexpectedSuccess", "addSubTest", "wasSuccessful"),
            ),
            ("TextTestResult", ("addSuccess", "addFailure", "addError", "addSkip")),
            ("TextTestRunner", ("run",)),
            ("TestLoader", ("discover", "loadTestsFromName", "loadTestsFromModule")),
        )
        for name in names
    ),
    ("unittest.case", "_Outcome", "testPartExecutor"),  # outcomes.guard_unittest
    ("unittest.case", "", "_ShouldStop"),
    # every class statement of the test modules goes through it: a replaced one can wrap
    # their test methods (the second review of 2026-12-05)
    ("builtins", "", "__build_class__"),
)  # fmt: skip

PYTEST_ENTRY_POINTS: tuple[tuple[str, str, str], ...] = (
    ("_pytest.runner", "", "pytest_runtest_protocol"),
    ("_pytest.runner", "", "runtestprotocol"),
    ("_pytest.runner", "", "call_and_report"),
    ("_pytest.runner", "", "call_runtest_hook"),
    ("_pytest.runner", "CallInfo", "from_call"),
    ("_pytest.reports", "TestReport", "from_item_and_call"),
    ("_pytest.python", "Function", "runtest"),
    ("_pytest.unittest", "TestCaseFunction", "runtest"),
    ("_pytest.main", "", "pytest_runtestloop"),
)


class EntryPoint(NamedTuple):
    module: str
    owner: str
    name: str

    def label(self) -> str:
        return ".".join(part for part in (self.module, self.owner, self.name) if part)

    def current(self) -> Any:
        """The object now bound there (a sentinel string when it is gone)."""
        target: Any = importlib.import_module(self.module)
        if self.owner:
            target = getattr(target, self.owner, None)
        # ``__dict__`` lookup, not getattr: a class attribute replaced on a subclass
        # or a descriptor that computes a fresh object must not look "unchanged".
        namespace = getattr(target, "__dict__", {})
        return namespace.get(self.name, "<missing>")


class Snapshot:
    """Identities of the runner's entry points at one moment."""

    def __init__(self, entries: dict[EntryPoint, Any]) -> None:
        self._entries = entries

    @classmethod
    def take(cls, runner: str) -> Snapshot:
        """Record the entry points of ``runner`` (``unittest`` or ``pytest``), as loaded now."""
        points = list(UNITTEST_ENTRY_POINTS)
        if runner == "pytest":
            points += PYTEST_ENTRY_POINTS
        entries: dict[EntryPoint, Any] = {}
        for module, owner, name in points:
            point = EntryPoint(module, owner, name)
            try:
                entries[point] = point.current()
            except ImportError:
                continue  # an optional module of another pytest version
        return cls(entries)

    def changed(self) -> list[str]:
        """The entry points bound to another object than at ``take`` time."""
        moved: list[str] = []
        for point, original in self._entries.items():
            try:
                now = point.current()
            except ImportError:
                now = "<missing>"
            if now is not original:
                moved.append(point.label())
        return moved
