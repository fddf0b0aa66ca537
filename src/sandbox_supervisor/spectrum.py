"""Which functions the failing tests ran that the passing ones did not: a hint for the
repair strategy's localisation (spectrum-based fault localisation, Ochiai's measure).

``run_tests RUNNER --spectrum`` runs the whole suite as usual and, per test, notes the
functions of the repository's own files (not its test files) that it called (a global
trace function that sees ``call`` events only and never traces lines). At the end one
line goes to stderr: ``MARK`` and a JSON object with the numbers of failing and passing
tests and, for at most ``MAX_FUNCTIONS`` functions, ``[path, first line, failing tests
that ran it, passing tests that ran it]``, most suspicious first (Ochiai: ``f /
sqrt(F * (f + p))``). It is printed output, like any test's: the host reads it as an
untrusted hint, bounded, to rank what it shows the model, never as a verdict (code under
test can print such a line, or turn the tracing off, as it can mislead a traceback).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any

SPECTRUM_ARG = "--spectrum"
"""The second argument that makes a run also report its spectrum (a selector never
starts so)."""
MARK = "sandbox-agent-spectrum: "
MAX_FUNCTIONS = 20
Key = tuple[str, int]
"""A function: its file relative to the root, and its first line."""


def is_test_file(relative: str) -> bool:
    """Test modules and pytest's configuration: never a suspect of their own."""
    name = relative.rsplit("/", 1)[-1]
    return name.startswith("test") or name.endswith("_test.py") or name == "conftest.py"


class Spectrum:
    """The functions each test called, and the line the host reads."""

    def __init__(self, root: str) -> None:
        self._root = root.rstrip("/") + "/"
        self._keys: dict[Any, Key | None] = {}
        self._current: set[Key] | None = None
        self._test = ""
        self._runs: list[tuple[str, frozenset[Key]]] = []

    def _key(self, code: Any) -> Key | None:
        filename = code.co_filename
        if not filename.startswith(self._root):
            return None
        relative = filename[len(self._root) :]
        if is_test_file(relative) or relative.startswith(".") or "/." in relative:
            return None
        return (relative, code.co_firstlineno)

    def _trace(self, frame: Any, event: str, arg: Any) -> None:
        current = self._current
        if current is None:
            return
        code = frame.f_code
        try:
            key = self._keys[code]
        except KeyError:
            key = self._keys[code] = self._key(code)
        if key is not None:
            current.add(key)

    def install(self) -> None:
        sys.settrace(self._trace)
        threading.settrace(self._trace)

    def uninstall(self) -> None:
        sys.settrace(None)
        threading.settrace(None)

    def start(self, test_id: str) -> None:
        self._test = test_id
        self._current = set()

    def stop(self) -> None:
        if self._current is not None:
            self._runs.append((self._test, frozenset(self._current)))
        self._current = None

    def line(self, failing: set[str]) -> str:
        """``MARK`` and the spectrum, given the ids of the tests that failed or errored."""
        failed = sum(test in failing for test, _ in self._runs)
        passed = len(self._runs) - failed
        counts: dict[Key, list[int]] = {}
        for test, keys in self._runs:
            column = 0 if test in failing else 1
            for key in keys:
                counts.setdefault(key, [0, 0])[column] += 1
        ranked = sorted(
            ((key, f, p) for key, (f, p) in counts.items() if f > 0),
            key=lambda item: (-_ochiai(item[1], item[2], failed), -item[1], item[0]),
        )
        functions = [[path, line, f, p] for (path, line), f, p in ranked[:MAX_FUNCTIONS]]
        body = {"failed": failed, "passed": passed, "functions": functions}
        return MARK + json.dumps(body, separators=(",", ":"))


def _ochiai(failing_ran: int, passing_ran: int, failing: int) -> float:
    return failing_ran / math.sqrt(failing * (failing_ran + passing_ran))


@contextlib.contextmanager
def tracing(spectrum: Spectrum | None) -> Iterator[None]:
    """``spectrum`` traces calls while the suite runs (nothing when None)."""
    if spectrum is None:
        yield
        return
    spectrum.install()
    try:
        yield
    finally:
        spectrum.uninstall()


def spectrum_for(root: str) -> Spectrum:
    """A recorder for the repository at ``root`` (the runner's working directory)."""
    return Spectrum(os.path.realpath(root))
