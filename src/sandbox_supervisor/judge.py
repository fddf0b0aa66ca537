"""The held-out judge: ``python3 -I -B -m sandbox_supervisor.judge`` (issue 15).

PID 1 forks it as ``identity.JUDGE_UID`` with cwd ``/``, so neither the workspace nor
anything the candidate's uid can write is on its path, and with these descriptors:

- fd 0: its input, an anonymous file PID 1 filled (``{"name", "source",
  "call_timeout_s"}``: the held-out unittest module, trusted evaluation data, never in
  the workspace, and the deadline of each request to the candidate);
- fd 1, 2: output, relayed by PID 1 as data;
- fd 3: the runner report to PID 1 (the same format as ``run_tests``; runner
  ``judge``), which no process of another uid can open;
- fd 4, 5: requests to the candidate and its answers (``remote.Candidate``).

It runs the module's tests with ``remote.candidate`` connected, writes the counts, and
exits 0 only when at least one test ran and none failed. The code under test never runs
here: every call into it is a request, every result a plain value built here.
"""

from __future__ import annotations

import json
import os
import sys
import types
import unittest
from typing import Any

from sandbox_supervisor import remote
from sandbox_supervisor.run_tests import EXIT_FAILED, EXIT_PASSED
from sandbox_supervisor.runner_report import write_report

INPUT_FD = 0
REPORT_FD = 3
REQUEST_FD = 4
ANSWER_FD = 5
MAX_INPUT_BYTES = 1024 * 1024


def read_input(fd: int = INPUT_FD) -> dict[str, Any]:
    """The judge's input: ``{"name": module name, "source": its text, "call_timeout_s":
    seconds}``.

    Raises:
        ValueError: not that, or longer than ``MAX_INPUT_BYTES``.
    """
    data = bytearray()
    while chunk := os.read(fd, 65536):
        data += chunk
        if len(data) > MAX_INPUT_BYTES:
            raise ValueError(f"judge input over {MAX_INPUT_BYTES} bytes")
    value = json.loads(data.decode("utf-8"))
    if (
        type(value) is not dict
        or set(value) != {"name", "source", "call_timeout_s"}
        or not all(type(value[key]) is str for key in ("name", "source"))
        or not value["name"].isidentifier()
        or type(value["call_timeout_s"]) not in (int, float)
        or not 0 < value["call_timeout_s"] <= remote.MAX_CALL_TIMEOUT_S  # NaN too
    ):
        raise ValueError(
            "judge input must be {name: identifier, source: text, call_timeout_s: seconds"
            f" in (0, {remote.MAX_CALL_TIMEOUT_S:g}]}}"
        )
    return value


def load_module(name: str, source: str) -> types.ModuleType:
    """The held-out module, run in this process (``remote.candidate`` already set)."""
    module = types.ModuleType(name)
    module.__file__ = f"<held-out {name}>"
    exec(compile(source, module.__file__, "exec"), module.__dict__)  # noqa: S102 - trusted eval data
    return module


def run(name: str, source: str) -> tuple[dict[str, Any], bool]:
    """Run the module's tests; the counts (``run_tests`` format) and the verdict."""
    loader = unittest.TestLoader()
    try:
        suite = loader.loadTestsFromModule(load_module(name, source))
    except Exception as error:
        print(
            f"judge: cannot load the held-out module: {type(error).__name__}: {error}",
            file=sys.stderr,
        )
        return {"runner": "judge", "tests_run": 0, "failures": 0, "errors": 1, "skipped": 0}, False
    result = unittest.TextTestRunner(stream=sys.stderr, verbosity=2).run(suite)
    counts = {
        "runner": "judge",
        "tests_run": result.testsRun,
        "failures": len(result.failures) + len(result.unexpectedSuccesses),
        "errors": len(result.errors),
        "skipped": len(result.skipped),
    }
    return counts, result.wasSuccessful() and not loader.errors


def main() -> int:
    """Read the input, connect to the candidate, run, report."""
    for fd in (REPORT_FD, REQUEST_FD, ANSWER_FD):
        os.set_inheritable(fd, False)
    try:
        spec = read_input()
    except (ValueError, OSError) as error:
        print(f"judge: bad input: {error}", file=sys.stderr)
        write_report(
            REPORT_FD, {"runner": "judge", "tests_run": 0, "failures": 0, "errors": 1, "skipped": 0}
        )
        return EXIT_FAILED
    remote.candidate = remote.Candidate(
        REQUEST_FD, ANSWER_FD, call_timeout_s=float(spec["call_timeout_s"])
    )
    counts, passed = run(spec["name"], spec["source"])
    remote.candidate.close()
    os.close(REQUEST_FD)  # the candidate reads EOF and exits
    write_report(REPORT_FD, counts)
    ok = passed and counts["tests_run"] >= 1 and counts["failures"] == counts["errors"] == 0
    return EXIT_PASSED if ok else EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
