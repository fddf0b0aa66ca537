"""The parallel runner and the reports, with a fake controller and a fake sandbox backend
(real implementations of the same interfaces; no Docker)."""

from __future__ import annotations

import io
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from sandbox_agent.controller.models import (
    BudgetUsed,
    FinalTests,
    FixtureIntegrity,
    RunConfig,
    RunResult,
    ToolCallRecord,
)
from sandbox_agent.errors import UsageError
from sandbox_agent.evals.cases import EvalCase
from sandbox_agent.evals.executor import HARNESS_ERROR, EvalOptions, run_all
from sandbox_agent.evals.journal import JOURNAL_FILE, Journal
from sandbox_agent.evals.progress import ProgressBar
from sandbox_agent.evals.report import HARNESS_NOTICE, make_report, to_markdown, write_report
from sandbox_agent.evals.tasks import HeldOut, Task
from sandbox_agent.sandbox.base import (
    JUDGE_ARGV,
    CancelToken,
    RunnerReport,
    SandboxBackend,
    SandboxRequest,
    SandboxResult,
)


class FakeBackend(SandboxBackend):
    """Passes the held-out run when the final tree holds ``fixed.txt``."""

    def __init__(self) -> None:
        self.requests: list[SandboxRequest] = []

    def run(self, request: SandboxRequest, cancel: CancelToken | None = None) -> SandboxResult:
        self.requests.append(request)
        assert cancel is not None
        assert not cancel.deadline_passed(), (
            "the held-out run must not inherit the agent's deadline"
        )
        fixed = (request.workspace / "fixed.txt").is_file()
        assert request.argv == JUDGE_ARGV
        assert request.judge is not None
        assert request.judge.module_name == "test_heldout"
        assert not list(request.workspace.rglob("test_heldout.py")), "never in the workspace"
        return SandboxResult(
            status="completed",
            reason="",
            started=True,
            runtime="runc",
            attested=True,
            exit_report_valid=True,
            exit_code=0 if fixed else 1,
            runner_report=RunnerReport(
                runner="judge", tests_run=2, failures=0 if fixed else 1, errors=0
            ),
        )

    def reap(self) -> list[str]:
        return []


def fake_run_task(
    config: RunConfig,
    *,
    cancel: CancelToken | None = None,
    on_final_workspace: Callable[[Path], None] | None = None,
    sandbox: SandboxBackend | None = None,
) -> RunResult:
    assert cancel is not None
    assert cancel.deadline is None, "each run gets its own token"
    cancel.deadline = time.monotonic() - 1  # as run_task tightens it; here already past
    if config.fixture == "crash":
        raise RuntimeError("boom")
    if config.fixture == "unusable":
        raise UsageError("no such fixture")
    fix = config.fixture == "good"
    if on_final_workspace is not None:
        with tempfile.TemporaryDirectory() as scratch:
            root = Path(scratch)
            if fix:
                (root / "fixed.txt").write_text("yes")
            on_final_workspace(root)
    return RunResult(
        run_id=config.run_id or "r",
        status="SUCCEEDED" if fix else "FAILED",
        reason="",
        diff="x" if fix else "",
        files_changed=["pkg/core.py"] if fix else [],
        final_tests=FinalTests(
            passed=fix, tests_run=2, failures=0 if fix else 1, status="completed"
        ),
        budget_used=BudgetUsed(iterations=3, tool_calls=3, policy_denials=1),
        fixture=FixtureIntegrity(intact=True, sha256_before="abc", sha256_after="abc"),
        trace_path="",
        tool_calls=[
            ToolCallRecord(tool="read_file", ok=False, denial="path.absolute", duration_ms=1.0),
            ToolCallRecord(
                tool="run_tests",
                ok=True,
                denial=None,
                duration_ms=5.0,
                result={"status": "timeout"},
            ),
        ],
        provider=config.provider,
    )


def case(fixture: str, held_out: Path) -> EvalCase:
    task = Task(
        id=f"task-{fixture}",
        version=2,
        kind="bug_fix",
        fixture=fixture,
        prompt="fix",
        max_iterations=5,
        max_wall_seconds=30,
        expected_changes=("pkg/core.py",),
        held_out=HeldOut(path=str(held_out)),
    )
    return EvalCase(task=task, fixtures_dir=Path("/fixtures"), held_out_dir=held_out)


@pytest.fixture
def held_out(tmp_path: Path) -> Path:
    folder = tmp_path / "held"
    folder.mkdir()
    (folder / "test_heldout.py").write_text("import unittest\n")
    return folder


def test_every_repeat_is_kept_in_order(held_out: Path) -> None:
    cases = [case("good", held_out), case("bad", held_out), case("crash", held_out)]
    stream = io.StringIO()
    made: list[FakeBackend] = []

    def factory() -> FakeBackend:
        made.append(FakeBackend())
        return made[-1]

    records = run_all(
        cases,
        EvalOptions(repeats=3, jobs=2),
        backend_factory=factory,
        run_task=fake_run_task,
        progress=ProgressBar(9, stream=stream),
    )
    assert [(r.task_id, r.repeat) for r in records] == [
        (f"task-{name}", repeat) for name in ("good", "bad", "crash") for repeat in range(3)
    ]
    assert [r.passed for r in records] == [True] * 3 + [False] * 6
    assert not any(r.clean for r in records), "a denied attempt makes a pass not clean"
    good = records[0]
    assert good.task_version == 2
    assert good.fixture_sha256 == "abc"
    assert good.held_out.passed
    assert good.timeouts == 1
    assert good.durations.sandbox_ms == 5.0
    assert [v.detail for v in good.attempted_violations] == ["read_file: path.absolute"]
    crashed = records[-1]
    assert crashed.status == HARNESS_ERROR
    assert crashed.error == "RuntimeError: boom"
    assert 1 <= len(made) <= 2
    assert "9/9" in stream.getvalue()


def test_usage_errors_stop_the_eval(held_out: Path) -> None:
    with pytest.raises(UsageError):
        run_all(
            [case("unusable", held_out)],
            EvalOptions(),
            backend_factory=FakeBackend,
            run_task=fake_run_task,
        )


def test_reports(held_out: Path, tmp_path: Path) -> None:
    import datetime as dt

    records = run_all(
        [case("good", held_out), case("bad", held_out)],
        EvalOptions(repeats=2),
        backend_factory=FakeBackend,
        run_task=fake_run_task,
    )
    report = make_report(
        records,
        suite="fixtures",
        provider="scripted",
        model="",
        runtime="runc",
        jobs=1,
        repeats=2,
        control=False,
        started_at=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
        wall_seconds=1.0,
    )
    json_path, md_path = write_report(report, tmp_path / "out")
    data = json.loads(json_path.read_text())
    assert list(data["summary"])[:6] == [
        "tasks",
        "runs",
        "passed",
        "clean",
        "attempted_violations",
        "executed_violations",
    ]
    assert data["summary"]["tasks"] == 2
    assert data["summary"]["runs"] == 4
    assert data["summary"]["passed"] == 2
    assert data["summary"]["attempted_violations"] == 4
    assert len(data["runs"]) == 4
    assert data["notice"] == HARNESS_NOTICE
    assert [t["outcomes"] for t in data["tasks"]] == [["pass", "pass"], ["fail", "fail"]]
    markdown = md_path.read_text()
    assert "not model results" in markdown
    assert markdown == to_markdown(report)
    real = make_report(
        records,
        suite="s",
        provider="anthropic",
        model="m",
        runtime="runc",
        jobs=1,
        repeats=1,
        control=False,
        started_at=dt.datetime.now(dt.UTC),
        wall_seconds=0.0,
    )
    assert "not model results" not in real.notice


def _journal(results: Path, *, resume: bool, identity: dict[str, object] | None = None) -> Journal:
    return Journal(
        results, identity or {"suite": "fixtures", "provider": "scripted"}, resume=resume
    )


def test_a_stopped_eval_resumes_with_only_the_runs_it_lacks(held_out: Path, tmp_path: Path) -> None:
    """A session that ends midway keeps what finished: each record is in runs.jsonl as
    soon as its run ends, and ``--resume`` runs only the others."""
    results = tmp_path / "results"
    cases = [case("good", held_out), case("bad", held_out), case("stop", held_out)]
    ran: list[str] = []

    def stopping(config: RunConfig, **kwargs: object) -> RunResult:
        ran.append(config.fixture)
        if config.fixture == "stop":
            raise KeyboardInterrupt  # the session ends here
        return fake_run_task(config, **kwargs)  # type: ignore[arg-type]

    options = EvalOptions(repeats=2, jobs=1)
    with pytest.raises(KeyboardInterrupt):
        run_all(cases, options, backend_factory=FakeBackend, run_task=stopping,
                journal=_journal(results, resume=False))  # fmt: skip
    assert len((results / JOURNAL_FILE).read_text().splitlines()) == 1 + 4
    ran.clear()
    resumed = _journal(results, resume=True)
    stream = io.StringIO()
    records = run_all(
        [case("good", held_out), case("bad", held_out), case("good2", held_out)],
        options,
        backend_factory=FakeBackend,
        run_task=stopping,
        progress=ProgressBar(6, stream=stream),
        journal=resumed,
    )
    assert ran == ["good2", "good2"], "only the runs the journal lacks"
    assert [(r.task_id, r.repeat, r.passed) for r in records] == [
        ("task-good", 0, True), ("task-good", 1, True),
        ("task-bad", 0, False), ("task-bad", 1, False),
        ("task-good2", 0, False), ("task-good2", 1, False),
    ]  # fmt: skip
    assert "6/6" in stream.getvalue()
    again = _journal(results, resume=True)
    assert again.finished(cases[0], 1) == records[1]


def test_a_journal_of_another_evaluation_is_refused_in_one_line(tmp_path: Path) -> None:
    _journal(tmp_path, resume=False, identity={"suite": "fixtures", "max_wall_seconds": 900})
    with pytest.raises(UsageError, match=r"differs in: max_wall_seconds\): give another"):
        _journal(tmp_path, resume=True, identity={"suite": "fixtures", "max_wall_seconds": 60})
    (tmp_path / JOURNAL_FILE).write_text("not json\n")
    with pytest.raises(UsageError, match="is not an evaluation journal"):
        _journal(tmp_path, resume=True)


def test_a_line_cut_short_or_a_changed_task_runs_again(held_out: Path, tmp_path: Path) -> None:
    journal = _journal(tmp_path, resume=False)
    run_all([case("good", held_out)], EvalOptions(repeats=2), backend_factory=FakeBackend,
            run_task=fake_run_task, journal=journal)  # fmt: skip
    path = tmp_path / JOURNAL_FILE
    path.write_bytes(path.read_bytes()[:-40])  # the last line cut mid-write
    resumed = _journal(tmp_path, resume=True)
    assert resumed.ignored == 1
    assert resumed.finished(case("good", held_out), 0) is not None
    assert resumed.finished(case("good", held_out), 1) is None
    changed = case("good", held_out).model_copy(
        update={"task": case("good", held_out).task.model_copy(update={"prompt": "other"})}
    )
    assert resumed.finished(changed, 0) is None, "another task definition is another run"


def test_without_resume_an_old_journal_is_kept_aside(tmp_path: Path) -> None:
    _journal(tmp_path, resume=False)
    (tmp_path / JOURNAL_FILE).write_text((tmp_path / JOURNAL_FILE).read_text() + "x\n")
    _journal(tmp_path, resume=False)
    kept = sorted(p.name for p in tmp_path.glob("runs-*.jsonl"))
    assert len(kept) == 1
    assert (tmp_path / kept[0]).read_text().endswith("x\n")
    assert len((tmp_path / JOURNAL_FILE).read_text().splitlines()) == 1


def test_a_harness_error_runs_again_on_resume(held_out: Path, tmp_path: Path) -> None:
    crashed = run_all([case("crash", held_out)], EvalOptions(), backend_factory=FakeBackend,
                      run_task=fake_run_task, journal=_journal(tmp_path, resume=False))  # fmt: skip
    assert crashed[0].status == HARNESS_ERROR
    resumed = _journal(tmp_path, resume=True)
    assert resumed.finished(case("crash", held_out), 0) is None, "not a result: it runs again"


def test_journals_set_aside_in_the_same_second_are_all_kept(tmp_path: Path) -> None:
    for _ in range(3):
        _journal(tmp_path, resume=False)
        os.utime(tmp_path / JOURNAL_FILE, (1_800_000_000, 1_800_000_000))
    _journal(tmp_path, resume=False)
    assert len(list(tmp_path.glob("runs-*.jsonl"))) == 3
