"""Regenerate ``docs/REGRESSION_EVIDENCE.md``: every finding's tests, before and after its fix.

For each fixed finding of ``docs/findings.toml`` the commit before its fix is checked out
in a temporary worktree (``oldtree``) and the finding's tests run there against the old
code: today's tests; where today's cannot run against the old code, the tests of the fix
commit; where those cannot either, the old tree's own. They must fail, or be not
applicable (``regression_run``) with the reason shown. Then every finding's tests run on
the current tree: a fixed finding's must pass, an open one's must fail as strict xfails.

``python -m devtools.assurance.regression`` (``make regression-evidence``) writes the
page and the README's line, and exits 0 only when no test passed before its fix, every
fixed finding's tests pass now and every open one's fail as expected. ``--only "SR-1,SR-7
F2"`` checks some findings and writes nothing."""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from devtools.assurance import gitrepo, oldtree, outcome_plugin
from devtools.assurance.findings import (
    Finding,
    before_commit,
    commit_problems,
    load,
    named_test_problems,
)
from devtools.assurance.guarantees import collect
from devtools.assurance.regression_models import Evidence, FindingEvidence
from devtools.assurance.regression_run import NOT_COLLECTED, PLUGIN_MODULE, CaseRun, run_tests
from sandbox_agent.errors import SetupError, UsageError
from sandbox_agent.settings import PROJECT_ROOT, state_home

CURRENT = "current"


def judge(finding: Finding, before: list[CaseRun], after: list[CaseRun]) -> tuple[str, bool]:
    """The row's verdict, and whether it is what a fixed (or open) finding must show."""
    now = {run.outcome for run in after}
    if finding.is_open:
        if now == {"xfailed"}:
            return "open: fails today (strict xfail)", True
        if "xpassed" in now:
            return "**XPASS: fixed? Fill in its fix commit**", False
        return "**open, but its tests do not fail as expected**", False
    earlier = {run.outcome for run in before}
    if not earlier:
        return "**not run before the fix**", False
    if earlier & {"passed", "xpassed"}:
        return "**PASSED BEFORE THE FIX**", False
    if now != {"passed"}:
        return "**does not pass after the fix**", False
    if earlier - {"failed", "xfailed", "not_applicable"}:
        return "**not run before the fix**", False
    if not earlier & {"failed", "xfailed"}:
        return "not applicable before the fix (reasons below)", True
    if "not_applicable" in earlier:
        return "fails before (some cases not applicable), passes after", True
    return "fails before, passes after", True


def _runtimes(runs: Sequence[CaseRun], docker: set[str]) -> list[str]:
    """The Docker runtimes the tests ran on: runsc where a case's id says so, else runc."""
    named = [run.test for run in runs if run.test.split("[", 1)[0] in docker or run.test in docker]
    return sorted({"runsc" if "runsc" in test else "runc" for test in named})


def _caveats(before: str) -> list[str]:
    try:
        same = gitrepo.git("rev-parse", f"{before}:uv.lock") == gitrepo.git(
            "hash-object", "uv.lock"
        )
    except SetupError:
        same = False
    return (
        [] if same else ["uv.lock differs from the current one: third-party packages are today's"]
    )


MOVED_ROOTS = ("src", "devtools", "tests")
"""Where the modules whose moves today's tests see through are (``module_moves``)."""


class Moves(NamedTuple):
    """Today's module name -> its name in an old tree (``module_moves``)."""

    moves: dict[str, str]
    first: list[str]
    """The moves into ``tests/`` (test doubles taken out of the product): today's copy is
    laid into the old tree with today's tests and imports today's modules, so the old
    tree's own module is found first, before that copy."""


def _module(path: str) -> str | None:
    """``src/sandbox_agent/a/b.py`` -> ``sandbox_agent.a.b``; ``tests/a/b.py`` -> ``a.b``
    (pytest puts ``tests/`` on the path); ``devtools/...`` as it is."""
    parts = path.removesuffix(".py").split("/")
    if not path.endswith(".py") or parts[0] not in MOVED_ROOTS:
        return None
    parts = parts[1:] if parts[0] in ("src", "tests") else parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_moves(before: str) -> Moves:
    """Every module git sees as moved since ``before`` (issue 31 moved many): today's tests
    import them by today's names on the old tree.

    Seen two ways: one diff from ``before`` to today, and each commit's own renames and
    copies followed in order, which finds a module moved and rewritten since (under git's
    similarity threshold from end to end) and one moved beside a shim of its old name
    that a later commit removed (a copy, then a delete)."""
    origin: dict[str, str] = {}  # a path today -> its path at ``before``
    whole = gitrepo.git(
        "diff", "--name-status", "-M", "--diff-filter=R", before, "HEAD", "--", *MOVED_ROOTS
    )
    for _, old_path, new_path in _renames(whole):
        origin[new_path] = old_path
    stepwise = gitrepo.git(
        "log", "--reverse", "--format=", "--name-status", "-M", "-C", "--diff-filter=RC",
        f"{before}..HEAD", "--", *MOVED_ROOTS,
    )  # fmt: skip
    followed: dict[str, str] = {}
    copied: set[str] = set()
    for kind, old_path, new_path in _renames(stepwise):
        followed[new_path] = followed.get(old_path, old_path)
        if kind == "R":
            followed.pop(old_path, None)
        if kind == "C" or old_path in copied:
            copied.add(new_path)
    # A copy counts as a move only when its source is gone today (a shim removed): a new
    # module much like an old one is not that module, and importing the old one in its
    # place would show a test failing before a fix for a reason that is not the finding.
    today = set(
        gitrepo.git("ls-tree", "-r", "--name-only", "HEAD", "--", *MOVED_ROOTS).splitlines()
    )
    origin.update(
        (new, old) for new, old in followed.items() if new not in copied or old not in today
    )
    moves: dict[str, str] = {}
    first: list[str] = []
    for new_path, old_path in sorted(origin.items()):
        old, new = _module(old_path), _module(new_path)
        if old and new and old != new:
            moves[new] = old
            if new_path.startswith("tests/") and not old_path.startswith("tests/"):
                first.append(new)
    return Moves(moves, first)


def _renames(listing: str) -> list[tuple[str, str, str]]:
    """``(R or C, old path, new path)`` of each rename or copy line of ``--name-status``."""
    found = []
    for line in listing.splitlines():
        fields = line.split("\t")
        if len(fields) == 3 and fields[0][:1] in ("R", "C"):
            found.append((fields[0][:1], fields[1], fields[2]))
    return found


def _stands(run: CaseRun) -> bool:
    """Whether a case ran against the old code: neither not applicable nor not collected."""
    return run.outcome != "not_applicable" and run.message != NOT_COLLECTED


def _before(
    commit: str,
    entries: list[Finding],
    *,
    docker: set[str],
    holds: oldtree.ImageHolds,
    scratch: Path,
    plugin_dir: Path,
) -> list[CaseRun]:
    """The entries' tests on the tree of ``commit``: as they are today; where today's test
    cannot run against the old code, as committed with the fix; where that cannot either,
    as the old tree itself had it (a test committed before its fix, often a strict xfail)."""
    tests = [test for entry in entries for test in entry.tests]
    try:
        with oldtree.checkout(commit, scratch) as tree:
            python = oldtree.old_python(tree, scratch, plugin_dir)
            env = oldtree.tree_env(oldtree.state_folder(tree, python))
            if docker.intersection(tests):
                holds.keep(oldtree.old_image(tree, python, env))
            run = functools.partial(run_tests, python=python, scratch=scratch)
            oldtree.lay_tests(tree, None)
            moves = scratch / f"moves-{commit[:12]}.json"
            moves.write_text(json.dumps(module_moves(commit)._asdict()), encoding="utf-8")
            today = {**env, outcome_plugin.MOVES_ENV: str(moves)}
            runs = run(tree, tests, env=today, source=CURRENT)
            for entry in entries:
                for source in (entry.fix, commit):
                    retry = [case for case in _cases(entry.tests, runs) if not _stands(case)]
                    if not retry:
                        break
                    oldtree.lay_tests(tree, source)
                    label = f"fix {source[:7]}" if source == entry.fix else f"before {source[:7]}"
                    again = run(tree, [case.test for case in retry], env=env, source=label)
                    runs = _merged(runs, retry, again, label)
            return runs
    except SetupError as error:
        return [CaseRun(test=test, outcome="not_run", message=str(error)) for test in tests]


def _merged(
    runs: list[CaseRun], retry: list[CaseRun], again: list[CaseRun], label: str
) -> list[CaseRun]:
    """``runs`` with each retried case replaced by the other test bytes' outcome where those
    ran against the old code; where they did not either, the first reason, the next added."""
    result = [run for run in runs if run not in retry]
    for old in retry:
        found = _cases([old.test], again)
        if found and all(_stands(run) for run in found):
            result += found
            continue
        why = "; ".join(run.message for run in found) or "no such test"
        added = "" if why in old.message else f" (test of {label}: {why})"
        result.append(old.model_copy(update={"message": old.message + added}))
    return result


def _cases(tests: Sequence[str], pool: Sequence[CaseRun]) -> list[CaseRun]:
    return [
        run for test in tests for run in pool if run.test == test or run.test.startswith(test + "[")
    ]


def _per_case(earlier: list[CaseRun], now: list[CaseRun]) -> list[CaseRun]:
    """A test that was not even collected before stands for each of its cases today."""
    result: list[CaseRun] = []
    for run in earlier:
        cases = [case.test for case in now if case.test.startswith(run.test + "[")]
        is_whole = "[" not in run.test and run.outcome in {"not_applicable", "not_run"}
        result += [run.model_copy(update={"test": case}) for case in cases] if is_whole else []
        result += [] if is_whole and cases else [run]
    return result


def _row(entry: Finding, before: dict[str, list[CaseRun]], after: list[CaseRun]) -> FindingEvidence:
    previous = None if entry.is_open else before_commit(entry)
    now = _cases(entry.tests, after)
    earlier = _per_case(_cases(entry.tests, before[previous]), now) if previous else []
    verdict, ok = judge(entry, earlier, now)
    return FindingEvidence(
        finding=entry,
        before_commit=previous[:7] if previous else None,
        before=earlier,
        after=now,
        caveats=_caveats(previous) if previous else [],
        verdict=verdict,
        ok=ok,
    )


def gather(entries: Sequence[Finding]) -> Evidence:
    """Run every entry's tests before its fix and now.

    Raises:
        UsageError: a commit or a named test does not resolve here.
        SetupError: Docker or git failed.
    """
    started = time.monotonic()
    every_test = [test for entry in entries for test in entry.tests]
    collected = collect(every_test)
    bad = commit_problems(entries)
    bad += [line for entry in entries for line in named_test_problems(entry, collected)]
    if bad:
        raise UsageError("; ".join(bad))
    docker = {test for test in every_test if collected[test].docker}
    by_before: dict[str, list[Finding]] = {}
    for entry in entries:
        if not entry.is_open:
            by_before.setdefault(before_commit(entry), []).append(entry)
    before: dict[str, list[CaseRun]] = {}
    with (
        tempfile.TemporaryDirectory(prefix="sandbox-agent-regress-") as folder,
        oldtree.ImageHolds() as holds,
    ):
        scratch = Path(folder)
        plugin_dir = scratch / "plugin"
        plugin_dir.mkdir()
        shutil.copy2(outcome_plugin.__file__, plugin_dir / f"{PLUGIN_MODULE}.py")
        if docker:  # built again if another checkout's build removed it since make's set-up
            from sandbox_agent.hostsetup.image import ensure

            holds.keep(ensure().image_id)
        env = oldtree.tree_env(state_home(), pythonpath=plugin_dir)
        after = run_tests(
            PROJECT_ROOT,
            every_test,
            python=Path(sys.executable),
            env=env,
            scratch=scratch,
            source=CURRENT,
        )
        for commit, group in by_before.items():
            before[commit] = _before(
                commit, group, docker=docker, holds=holds, scratch=scratch, plugin_dir=plugin_dir
            )
    rows = [_row(entry, before, after) for entry in entries]
    return Evidence(
        generated=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        commit=gitrepo.head(),
        duration_s=round(time.monotonic() - started, 1),
        runtimes=_runtimes(after, docker),
        rows=rows,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Gather the evidence, write the page and the README's line; 0 only when it all holds."""
    from devtools.assurance import regression_render

    parser = argparse.ArgumentParser(prog="python -m devtools.assurance.regression")
    parser.add_argument("--only", default="", help='finding ids, comma-separated: "SR-1,SR-7 F2"')
    args = parser.parse_args(argv)
    try:
        entries = load()
        if args.only:
            wanted = [name.strip() for name in args.only.split(",") if name.strip()]
            unknown = sorted(set(wanted) - {entry.id for entry in entries})
            if unknown:
                raise UsageError(f"no such finding in docs/findings.toml: {', '.join(unknown)}")
            entries = [entry for entry in entries if entry.id in wanted]
        evidence = gather(entries)
    except (UsageError, SetupError) as error:
        print(f"regression-evidence: {error}", file=sys.stderr)
        return 2
    print(regression_render.render_rows(evidence))
    if not args.only:
        regression_render.write(evidence)
        print(f"wrote {regression_render.EVIDENCE_FILE}")
    print(regression_render.summary(evidence))
    return 0 if all(row.ok for row in evidence.rows) else 1


if __name__ == "__main__":
    sys.exit(main())
