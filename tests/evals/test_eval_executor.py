"""The parallel runner and the reports, with a fake controller and a fake sandbox backend
(real implementations of the same interfaces; no Docker)."""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from sandbox_agent.cli import main
from sandbox_agent.controller.models import (
    BudgetUsed,
    FinalTests,
    FixtureIntegrity,
    RunConfig,
    RunResult,
    ToolCallRecord,
)
from sandbox_agent.errors import UsageError
from sandbox_agent.evals.results.audit import verify_results
from sandbox_agent.evals.results.inputs import task_sha256
from sandbox_agent.evals.results.journal import Journal
from sandbox_agent.evals.results.journal_check import JOURNAL_FILE
from sandbox_agent.evals.results.records import HARNESS_ERROR
from sandbox_agent.evals.results.report import (
    HARNESS_NOTICE,
    EvalReport,
    make_report,
    to_markdown,
    write_report,
)
from sandbox_agent.evals.running.executor import run_all
from sandbox_agent.evals.running.options import EvalOptions
from sandbox_agent.evals.running.progress import ProgressBar
from sandbox_agent.evals.tasks.cases import EvalCase
from sandbox_agent.evals.tasks.taskfile import HeldOut, Task
from sandbox_agent.evidence import seal_run
from sandbox_agent.sandbox.base import (
    JUDGE_ARGV,
    CancelToken,
    RunnerReport,
    SandboxBackend,
    SandboxRequest,
    SandboxResult,
)
from sandbox_agent.workspace import WorkspaceLimits
from sandbox_agent.workspace.workspace import source_sha256


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
    # The controller's digest of the repository it copies.
    digest = source_sha256((config.fixtures_dir or Path()) / str(config.fixture), WorkspaceLimits())
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
        fixture=FixtureIntegrity(intact=True, sha256_before=digest, sha256_after=digest),
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
    fixtures = held_out.parent / "fixtures"
    (fixtures / fixture).mkdir(parents=True, exist_ok=True)
    (fixtures / fixture / "core.py").write_text("def f():\n    return 0\n")
    return EvalCase(task=task, fixtures_dir=fixtures, held_out_dir=held_out)


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
    assert good.fixture_sha256 == source_sha256(
        held_out.parent / "fixtures/good", WorkspaceLimits()
    )
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


KEY = Ed25519PrivateKey.generate()


def _journal(results: Path, *, resume: bool, identity: dict[str, object] | None = None) -> Journal:
    """A journal whose records need no run folder: these fake runs leave none (what a run
    folder must hold for a record to be reused is tests/evals/test_journal_trust.py's)."""
    return Journal(
        results,
        identity or {"suite": "fixtures", "provider": "scripted"},
        resume=resume,
        signing_key=KEY,
        check_run=lambda record: None,
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


# The journal's trust (SR-10 R1-R5): a record is reused only when its signed line and its
# sealed run folder both back it. ---------------------------------------------------------


def seal_result(config: RunConfig, result: RunResult) -> RunResult:
    """Leave ``result``'s run folder sealed with this host's key, as the controller does (a
    one-event trace, the result, the diff, evidence.json with the result's fixture
    hashes); the result, naming its trace."""
    assert config.trace_dir is not None
    run_dir = config.trace_dir / result.run_id
    run_dir.mkdir(parents=True)
    line = json.dumps(
        {
            "schema": 1,
            "run_id": result.run_id,
            "seq": 0,
            "time": "2026-12-02T00:00:00+00:00",
            "event": "run_ended",
            "prev_sha256": "0" * 64,
        }
    ).encode()
    (run_dir / "trace.jsonl").write_bytes(line + b"\n")
    result = result.model_copy(update={"trace_path": str(run_dir / "trace.jsonl")})
    data = result.model_dump(mode="json")
    (run_dir / "result.json").write_text(json.dumps(data))
    (run_dir / "diff.patch").write_text(result.diff)
    seal_run(
        run_dir,
        {
            "result": data,
            "fixture_sha256_before": result.fixture.sha256_before,
            "fixture_sha256_after": result.fixture.sha256_after,
            "diff_sha256": hashlib.sha256(result.diff.encode()).hexdigest(),
            "image_id": "sha256:" + "ab" * 32,
            "spec_sha256s": [],
            "attestation_sha256s": [],
            "exit_report_sha256s": [],
            "trace_head_sha256": hashlib.sha256(line).hexdigest(),
            "source_path": str(config.trace_dir / "gone"),
        },
    )
    return result


def sealing_run_task(config: RunConfig, **kwargs: object) -> RunResult:
    """``fake_run_task``, leaving a run folder sealed as the controller does."""
    return seal_result(config, fake_run_task(config, **kwargs))  # type: ignore[arg-type]


IDENTITY: dict[str, object] = {
    "suite": "fixtures",
    "control": False,
    "provider": "scripted",
    "model": None,
    "runtime": "runc",
}


@pytest.fixture
def sealed_eval(held_out: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An evaluation of a passing and a failing task whose runs left sealed folders."""
    monkeypatch.setenv("SANDBOX_AGENT_HOME", str(tmp_path / "state"))
    results = tmp_path / "results"
    journal = Journal(results, IDENTITY, resume=False)
    run_all([case("good", held_out), case("bad", held_out)],
            EvalOptions(trace_dir=results / "traces"), backend_factory=FakeBackend,
            run_task=sealing_run_task, journal=journal)  # fmt: skip
    return results


def lines(results: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (results / JOURNAL_FILE).read_text().splitlines()]


def write_lines(results: Path, entries: list[dict[str, object]]) -> None:
    (results / JOURNAL_FILE).write_text("".join(json.dumps(e) + "\n" for e in entries))


def reused(results: Path, held_out: Path, identity: dict[str, object] = IDENTITY) -> list[str]:
    journal = Journal(results, identity, resume=True)
    return [
        name for name in ("good", "bad") if journal.finished(case(name, held_out), 0) is not None
    ]


def test_r0_an_untouched_journal_is_reused_whole(sealed_eval: Path, held_out: Path) -> None:
    assert reused(sealed_eval, held_out) == ["good", "bad"]


def test_r1_a_record_edited_into_a_pass_runs_again(sealed_eval: Path, held_out: Path) -> None:
    # SR-10 R1 (B1, V2): the failing run's line, edited to passed, made a control 2/2.
    entries = lines(sealed_eval)
    record = entries[2]["record"]
    assert isinstance(record, dict)
    assert record["task_id"] == "task-bad"
    record.update(passed=True, status="SUCCEEDED")
    write_lines(sealed_eval, entries)
    journal = Journal(sealed_eval, IDENTITY, resume=True)
    assert journal.finished(case("bad", held_out), 0) is None
    assert journal.finished(case("good", held_out), 0) is not None
    assert any("signature does not hold" in why for why in journal.not_reused)


def test_r1_a_passing_line_pasted_under_another_key_runs_again(
    sealed_eval: Path, held_out: Path
) -> None:
    # SR-10 R1 (V13): the passing line copied under the failing task's key counted twice.
    entries = lines(sealed_eval)
    forged = json.loads(json.dumps(entries[1]))
    forged["key"] = entries[2]["key"]
    forged["task_sha256"] = entries[2]["task_sha256"]
    write_lines(sealed_eval, [entries[0], entries[1], forged])
    assert reused(sealed_eval, held_out) == ["good"]


def test_r1_a_record_of_another_evaluation_runs_again(
    sealed_eval: Path, held_out: Path, tmp_path: Path
) -> None:
    # SR-10 R1 (V17): a reference run's line carried into a control journal counted as a
    # pass there. Both journals are this host's, so only the identity tells them apart.
    control = {**IDENTITY, "control": True}
    other = tmp_path / "control"
    Journal(other, control, resume=False)
    reference = lines(sealed_eval)
    write_lines(other, [lines(other)[0], *reference[1:]])
    assert reused(other, held_out, control) == []


def test_r1_a_record_whose_run_folder_is_gone_or_changed_runs_again(
    sealed_eval: Path, held_out: Path
) -> None:
    # SR-10 R1 (V3): with traces/ deleted, the records were still reused.
    good = Path(str(lines(sealed_eval)[1]["record"]["trace_path"])).parent  # type: ignore[index]
    (good / "result.json").write_text((good / "result.json").read_text().replace("SUCC", "succ"))
    bad = Path(str(lines(sealed_eval)[2]["record"]["trace_path"])).parent  # type: ignore[index]
    for item in bad.iterdir():
        item.unlink()
    bad.rmdir()
    journal = Journal(sealed_eval, IDENTITY, resume=True)
    assert journal.finished(case("good", held_out), 0) is None
    assert journal.finished(case("bad", held_out), 0) is None
    assert sorted(journal.not_reused.values()) == [1, 1]
    assert all("does not verify" in why for why in journal.not_reused)


def test_r2_a_record_after_a_line_cut_short_is_kept(sealed_eval: Path, held_out: Path) -> None:
    # SR-10 R2 (M4): the next record was glued to the cut line and lost at the next resume.
    path = sealed_eval / JOURNAL_FILE
    entries = path.read_text().splitlines()
    path.write_text(entries[0] + "\n" + entries[1] + "\n" + entries[2][:40])
    journal = Journal(sealed_eval, IDENTITY, resume=True)
    assert journal.finished(case("bad", held_out), 0) is None
    run_all([case("bad", held_out)], EvalOptions(trace_dir=sealed_eval / "traces"),
            backend_factory=FakeBackend, run_task=sealing_run_task, journal=journal)  # fmt: skip
    assert reused(sealed_eval, held_out) == ["good", "bad"]


@pytest.mark.parametrize(
    "line",
    ["[" * 100_000 + "]" * 100_000, '{"key": ["task-bad", Infinity, 0], "record": {}}', "\udce9"],
)
def test_r3_a_line_no_parser_likes_is_ignored_not_a_crash(
    sealed_eval: Path, held_out: Path, line: str
) -> None:
    # SR-10 R3 (V5, V6): a RecursionError or an OverflowError ended the eval in a traceback.
    with (sealed_eval / JOURNAL_FILE).open("a", encoding="utf-8", errors="surrogateescape") as f:
        f.write(line + "\n")
    journal = Journal(sealed_eval, IDENTITY, resume=True)
    assert journal.ignored == 1
    assert journal.finished(case("good", held_out), 0) is not None


def test_r4_links_and_odd_files_are_one_line_and_write_nothing_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SR-10 R4 (V7, V8, V9, afile): a dangling runs.jsonl link made a journal outside the
    # folder; a report.json link wrote the report over its target; a folder or a file where
    # a journal or the results folder should be was a traceback.
    monkeypatch.setenv("SANDBOX_AGENT_HOME", str(tmp_path / "state"))
    outside = tmp_path / "outside"
    outside.mkdir()
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / JOURNAL_FILE).symlink_to(outside / "created.jsonl")
    with pytest.raises(UsageError, match="is not a plain file"):
        Journal(linked, IDENTITY, resume=False)
    assert not (outside / "created.jsonl").exists()
    folder = tmp_path / "folder"
    (folder / JOURNAL_FILE).mkdir(parents=True)
    with pytest.raises(UsageError, match="is not a plain file"):
        Journal(folder, IDENTITY, resume=True)
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    with pytest.raises(UsageError, match=r"cannot use .* as the results folder"):
        Journal(a_file, IDENTITY, resume=False)
    victim = outside / "victim.txt"
    victim.write_text("mine")
    (linked / "report.json").symlink_to(victim)
    report = make_report([], suite="fixtures", provider="scripted", model="m", runtime="runc",
                         jobs=1, repeats=1, control=False, started_at=dt.datetime.now(dt.UTC),
                         wall_seconds=0.0)  # fmt: skip
    write_report(report, linked)
    assert victim.read_text() == "mine"
    assert not (linked / "report.json").is_symlink()


# verify RESULTS_DIR (SR-10 R5): what a reviewer handed the folder can check. -------------


def identity_of(journal: Journal) -> dict[str, object]:
    """``make_report``'s ``identity``, the journal's, as the eval command hands it over
    (none where the report has no such field: these tests also run on older code for
    docs/REGRESSION_EVIDENCE.md)."""
    return {"identity": journal.identity} if "identity" in EvalReport.model_fields else {}


def reported(results: Path, held_out: Path) -> EvalReport:
    """The report the harness would write for ``sealed_eval``'s runs, written."""
    journal = Journal(results, IDENTITY, resume=True)
    records = [journal.finished(case(name, held_out), 0) for name in ("good", "bad")]
    report = make_report([r for r in records if r is not None], suite="fixtures",
                         provider="scripted", model="", runtime="runc", jobs=1, repeats=1,
                         control=False, started_at=dt.datetime.now(dt.UTC),
                         wall_seconds=1.0, **identity_of(journal))  # fmt: skip
    write_report(report, results)
    return report


def harness_task_hashes(
    results: Path,
) -> Callable[[dict[str, object], list[str]], dict[str, tuple[str, str]]]:
    """The task hashes and repository digests of this harness's cases (``case``), as
    ``verify RESULTS_DIR`` would rebuild them were they tasks of ``evals/tasks.json``."""
    held = results.parent / "held"

    def hashes(identity: dict[str, object], task_ids: list[str]) -> dict[str, tuple[str, str]]:
        cases = [case(task_id.removeprefix("task-"), held) for task_id in task_ids]
        from sandbox_agent.evals.results.journal import task_inputs  # (SR-11: not in older code)

        return {each.task.id: (task_sha256(each), task_inputs(each).repository) for each in cases}

    return hashes


def failed_checks(results: Path, **kwargs: object) -> dict[str, str]:
    kwargs.setdefault("task_hashes", harness_task_hashes(results))
    return {c.name: c.detail for c in verify_results(results, **kwargs) if not c.ok}  # type: ignore[arg-type]


def test_r5_an_honest_results_folder_verifies(sealed_eval: Path, held_out: Path) -> None:
    reported(sealed_eval, held_out)
    assert failed_checks(sealed_eval) == {}


def test_r5_a_report_edited_or_padded_is_not_verified(sealed_eval: Path, held_out: Path) -> None:
    report = reported(sealed_eval, held_out)
    flipped = report.runs[1].model_copy(update={"passed": True})
    write_report(report.model_copy(update={"runs": [report.runs[0], flipped]}), sealed_eval)
    assert "differs from its signed line" in failed_checks(sealed_eval)["runs"]
    twice = report.model_copy(update={"runs": [report.runs[0], report.runs[0]]})
    write_report(twice, sealed_eval)
    assert "counted twice" in failed_checks(sealed_eval)["runs"]
    more = report.summary.model_copy(update={"passed": 2})
    write_report(report.model_copy(update={"summary": more}), sealed_eval)
    assert set(failed_checks(sealed_eval)) == {"summary"}
    assert main(["verify", str(sealed_eval)]) == 1


def test_r5_a_journal_or_run_folder_changed_is_not_verified(
    sealed_eval: Path, held_out: Path, tmp_path: Path
) -> None:
    reported(sealed_eval, held_out)
    entries = lines(sealed_eval)
    record = entries[2]["record"]
    assert isinstance(record, dict)
    record["passed"] = True
    write_lines(sealed_eval, entries)
    assert "no signed line" in failed_checks(sealed_eval)["runs"]
    other = Ed25519PrivateKey.generate().public_key()
    assert "2 of 2 not backed" in failed_checks(sealed_eval, public_key=other)["runs"]


def test_r5_a_run_folder_gone_is_not_verified(sealed_eval: Path, held_out: Path) -> None:
    report = reported(sealed_eval, held_out)
    (Path(report.runs[0].trace_path).parent / "evidence.json").unlink()
    assert "does not verify" in failed_checks(sealed_eval)["runs"]


@pytest.mark.xfail(
    strict=True,
    reason="SR-10 L4 (open): a results folder follows the caller's umask (the CLI's results "
    "are where the user puts them)",
)
def test_r6_a_results_folder_is_private_whatever_the_umask(tmp_path: Path) -> None:
    previous = os.umask(0o022)
    try:
        journal = _journal(tmp_path / "results", resume=False)
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "results").stat().st_mode) == 0o700
    assert stat.S_IMODE(journal.path.stat().st_mode) == 0o600


def test_r5_a_copy_is_judged_by_its_own_run_folders_each_of_its_own_run(
    sealed_eval: Path, held_out: Path, tmp_path: Path
) -> None:
    # The retest of SR-10: a copy of the folder without traces/ verified (the records'
    # absolute paths led to the originals), and two run folders swapped verified.
    report = reported(sealed_eval, held_out)
    copy = tmp_path / "copy"
    shutil.copytree(sealed_eval, copy)
    shutil.rmtree(copy / "traces")
    assert "does not verify" in failed_checks(copy)["runs"]
    first, second = (Path(run.trace_path).parent for run in report.runs)
    first.rename(first.with_name("swap"))
    second.rename(first)
    first.with_name("swap").rename(second)
    assert "holds another run" in failed_checks(sealed_eval)["runs"]


def test_ctrl_c_taken_by_a_worker_thread_still_stops_the_eval(held_out: Path) -> None:
    """A signal goes to any thread of the process; one a worker takes does not wake a main
    thread blocked waiting for runs, so the main thread waits in short steps (the
    ``run`` command's listener answers the same problem there)."""
    import signal
    import threading

    started = threading.Event()
    cancelled: list[bool] = []

    def waiting_run_task(config: RunConfig, **kwargs: object) -> RunResult:
        cancel = kwargs["cancel"]
        assert isinstance(cancel, CancelToken)
        started.set()
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)  # to this worker
        cancelled.append(cancel.wait(10.0))
        return fake_run_task(config, cancel=CancelToken())

    began = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        run_all(
            [case("good", held_out)],
            EvalOptions(),
            backend_factory=FakeBackend,
            run_task=waiting_run_task,
        )
    assert started.is_set()
    assert time.monotonic() - began < 5.0, "the main thread waited for the run to end"
    assert cancelled == [True], "the run in flight was not cancelled"
