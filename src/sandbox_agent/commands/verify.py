"""`sandbox-agent verify RUN_DIR`: check a run's sealed evidence; exit 0 only when all holds.

Given an evaluation's results folder (it holds ``runs.jsonl``), it checks the evaluation
instead: every run the report counts is backed by a signed journal line and a verifying
run folder and was made on the evaluation's inputs as they are here, and the report's
headline, summary and ``report.md`` are the ones its journal and runs give
(``evals.results.audit``). Either way it reads: nothing is fetched, no environment made."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from sandbox_agent.printable import printable

if TYPE_CHECKING:
    from sandbox_agent.evidence.verify import VerifyCheck

HELP = (
    "check a run's signed evidence, trace hash chain, result, diff and fixture hash "
    "(or, given an evaluation's results folder, every run its report counts, against the "
    "evaluation's inputs rebuilt here from what this host holds; nothing is fetched)"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags of ``verify``."""
    parser.add_argument(
        "run_dir",
        metavar="RUN_DIR",
        type=Path,
        help="the run's folder, or an evaluation's results folder (RESULTS_DIR)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--public-key",
        type=Path,
        metavar="FILE",
        help="the signer's signing-key.pub (default: this host's key)",
    )
    parser.add_argument(
        "--allow-missing-source",
        action="store_true",
        help="pass the fixture check when the original repository is not on this machine",
    )


def run(args: argparse.Namespace) -> int:
    """Verify and print one line per check, then the first failing event.

    Raises:
        UsageError: RUN_DIR does not exist, is not a folder, or holds run folders without
            being one (a ``--trace-dir``), or the public key cannot be read.
    """
    from sandbox_agent.errors import UsageError
    from sandbox_agent.evidence import load_public_key, verify_run

    run_dir: Path = args.run_dir
    if not run_dir.exists():
        raise UsageError(
            f"{run_dir} does not exist: pass a run's folder (it holds trace.jsonl) or an "
            "evaluation's results folder"
        )
    if not run_dir.is_dir():
        raise UsageError(f"{run_dir} is not a folder; pass the folder that holds trace.jsonl")
    held = folders_held(run_dir)
    if held:
        raise UsageError(
            f"{run_dir} holds {len(held)} run or results folders and is not one: verify "
            f"each, e.g. sandbox-agent verify {run_dir / held[-1]} (the last by name), or list "
            f"them with sandbox-agent view {run_dir}"
        )
    key = load_public_key(args.public_key) if args.public_key else None
    from sandbox_agent.evals.results.audit import is_results_dir, verify_results

    if is_results_dir(run_dir):
        checks = verify_results(run_dir, public_key=key)
        ok = all(check.ok for check in checks)
        if args.json:
            listed = [check.model_dump(mode="json") for check in checks]
            document = {"results_dir": str(run_dir), "ok": ok, "checks": listed}
            print(json.dumps(document, indent=2))
        else:
            _print_checks(checks)
            failed = [check.name for check in checks if not check.ok]
            print("verified" if ok else f"NOT verified: {', '.join(failed)}")
        return 0 if ok else 1
    report = verify_run(run_dir, public_key=key, allow_missing_source=args.allow_missing_source)
    if args.json:
        print(json.dumps(report.model_dump(mode="json"), indent=2))
    else:
        _print_checks(report.checks)
        bad = report.first_bad_event
        if bad is not None:
            print(f"first failing event: line {bad.line} (seq {bad.seq}): {_shown(bad.reason)}")
        print("verified" if report.ok else f"NOT verified: {', '.join(report.failed())}")
    return 0 if report.ok else 1


RUN_FILES = ("trace.jsonl", "result.json", "evidence.json", "diff.patch")
"""What a run folder holds."""
RESULTS_FILES = ("runs.jsonl", "report.json")
"""What an evaluation's results folder holds."""


def folders_held(folder: Path) -> list[str]:
    """The names of the run and results folders directly in ``folder``, by name, when
    ``folder`` itself holds none of their files (a ``--trace-dir``, ``results/``: what
    ``sandbox-agent view`` lists); else ``[]``. Links are not followed."""
    kept = (*RUN_FILES, *RESULTS_FILES)
    if any((folder / name).exists() for name in kept):
        return []
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return []
    return [
        entry.name
        for entry in entries
        if entry.is_dir()
        and not entry.is_symlink()
        and any((entry / name).is_file() for name in kept)
    ]


def _print_checks(checks: list[VerifyCheck]) -> None:
    """One line per check: ``ok``/``FAIL``, its name, what it found."""
    for check in checks:
        print(f"{'ok  ' if check.ok else 'FAIL'} {check.name:<12} {_shown(check.detail)}")


def _shown(text: str) -> str:
    """A hostile folder's text as a terminal may show it: a lone surrogate escaped (SR-11
    R11: never a traceback), control and format characters replaced."""
    return printable(text.encode("utf-8", "backslashreplace").decode("utf-8"))
