"""SR-11: a third outside retest of ``eval --resume`` and ``verify RESULTS_DIR`` (F1-F9),
and three outside retests of its fixes (R1-R12).

A run made on other inputs (a fixture with its bug removed, a plan since rewritten, or
inputs swapped while the run was in flight) was reused and verified; the report's
headline fields were not checked and hid where inputs and answers came from; a hostile
folder crashed or hung both. Each test here was written against the code before its fix
and failed there (docs/SECURITY_REVIEW.md, SR-11; docs/findings.toml).

The runs are the fake controller's of ``test_eval_executor`` (sealed like the real one's,
no Docker), over real tasks of ``evals/tasks.json`` whose fixture and plan are copies in
a temporary folder, so that ``verify RESULTS_DIR`` rebuilds them as it would any
evaluation's.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import math
import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from test_eval_executor import (
    IDENTITY,
    FakeBackend,
    case,
    harness_task_hashes,
    identity_of,
    seal_result,
    sealing_run_task,
)

from sandbox_agent.cli import main
from sandbox_agent.controller.models import (
    BudgetUsed,
    FinalTests,
    FixtureIntegrity,
    RunConfig,
    RunResult,
)
from sandbox_agent.errors import UsageError
from sandbox_agent.evals.results.audit import verify_results
from sandbox_agent.evals.results.journal import Journal
from sandbox_agent.evals.results.journal_check import JOURNAL_FILE
from sandbox_agent.evals.results.records import TRACES_DIR
from sandbox_agent.evals.results.report import EvalReport, make_report, to_markdown, write_report
from sandbox_agent.evals.running.executor import run_all
from sandbox_agent.evals.running.options import EvalOptions
from sandbox_agent.evals.tasks.cases import EvalCase
from sandbox_agent.evals.tasks.suites import SuiteOptions, build_cases
from sandbox_agent.sandbox.base import CancelToken, RunnerReport, SandboxRequest, SandboxResult
from sandbox_agent.settings import default_fixtures_dir
from sandbox_agent.workspace.hashing import tree_sha256

TASK = "paginator-fix"
FIXTURE = "paginator"


def fixture_run_task(config: RunConfig, **kwargs: object) -> RunResult:
    """A controller whose run passes exactly when the fixture it starts from already holds
    ``fixed.txt`` (a bug removed before the run); sealed with the fixture's real digest."""
    assert config.fixtures_dir is not None
    assert config.fixture is not None
    source = config.fixtures_dir / config.fixture
    digest = tree_sha256(source)
    on_final = kwargs.get("on_final_workspace")
    assert callable(on_final)
    on_final(source)
    fixed = (source / "fixed.txt").is_file()
    result = RunResult(
        run_id=config.run_id or "r",
        status="SUCCEEDED" if fixed else "FAILED",
        reason="",
        diff="",
        files_changed=[],
        final_tests=FinalTests(
            passed=fixed, tests_run=2, failures=0 if fixed else 1, status="completed"
        ),
        budget_used=BudgetUsed(iterations=1, tool_calls=1),
        fixture=FixtureIntegrity(intact=True, sha256_before=digest, sha256_after=digest),
        trace_path="",
        tool_calls=[],
        provider=config.provider,
    )
    return seal_result(config, result)


class Evaluation:
    """An evaluation of ``paginator-fix`` as ``sandbox-agent eval --fixtures-dir F
    [--plans P]`` makes it: the identity the command writes, the cases it builds, a
    report written as it writes it."""

    def __init__(self, root: Path, *, plans: Path | None = None) -> None:
        self.results = root / "results"
        self.fixtures = root / "fixtures"
        self.plans = plans
        if not self.fixtures.exists():
            shutil.copytree(default_fixtures_dir() / FIXTURE, self.fixtures / FIXTURE)
        options = EvalOptions()
        self.identity: dict[str, object] = {
            "suite": "fixtures",
            "control": False,
            "dataset": None,
            "plans": str(plans) if plans else None,
            "fixtures_dir": str(self.fixtures),
            **options.model_dump(mode="json", exclude={"jobs", "repeats", "trace_dir"}),
        }

    def cases(self, scratch: Path) -> list[EvalCase]:
        options = SuiteOptions(task_ids=[TASK], fixtures_dir=self.fixtures, plans_dir=self.plans)
        return build_cases("fixtures", options, scratch)

    def run(self, *, resume: bool) -> tuple[list[str], EvalReport]:
        """Run (or resume) it; the runs that ran, and the report written."""
        ran: list[str] = []

        def counting(config: RunConfig, **kwargs: object) -> RunResult:
            ran.append(str(config.fixture))
            return fixture_run_task(config, **kwargs)

        journal = Journal(self.results, self.identity, resume=resume)
        with tempfile.TemporaryDirectory() as scratch:
            records = run_all(self.cases(Path(scratch)),
                              EvalOptions(trace_dir=self.results / TRACES_DIR),
                              backend_factory=FakeBackend, run_task=counting,
                              journal=journal)  # fmt: skip
        report = make_report(records, suite="fixtures", provider="scripted", model="",
                             runtime="runc", jobs=1, repeats=1, control=False,
                             started_at=dt.datetime.now(dt.UTC), wall_seconds=1.0,
                             **identity_of(journal))  # fmt: skip
        write_report(report, self.results)
        return ran, report


def failed_checks(results: Path) -> dict[str, str]:
    """The checks ``verify RESULTS_DIR`` fails, as it runs them: inputs rebuilt here."""
    return {check.name: check.detail for check in verify_results(results) if not check.ok}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SANDBOX_AGENT_HOME", str(tmp_path / "state"))
    return tmp_path


def test_an_honest_evaluation_of_real_tasks_verifies_and_resumes_whole(home: Path) -> None:
    evaluation = Evaluation(home)
    ran, _ = evaluation.run(resume=False)
    assert ran == [FIXTURE]
    assert failed_checks(evaluation.results) == {}
    ran, _ = evaluation.run(resume=True)
    assert ran == [], "the same inputs: the run is reused"
    assert failed_checks(evaluation.results) == {}


# F1, F2: a run of other inputs. --------------------------------------------------------


def test_f1_a_run_on_a_fixture_since_changed_is_not_reused_nor_verified(home: Path) -> None:
    # The retest removed the bug from the fixture, ran, put the bug back and resumed: the
    # passing run was reused, and verify RESULTS_DIR passed the folder.
    evaluation = Evaluation(home)
    fixed = evaluation.fixtures / FIXTURE / "fixed.txt"
    fixed.write_text("the bug, removed before the run\n")
    ran, report = evaluation.run(resume=False)
    assert report.summary.passed == 1
    fixed.unlink()  # the bug put back
    assert "inputs" in failed_checks(evaluation.results), "a pass of another fixture"
    ran, report = evaluation.run(resume=True)
    assert ran == [FIXTURE], "the fixture changed: its run runs again"
    assert report.summary.passed == 0
    assert failed_checks(evaluation.results) == {}


def test_f2_a_run_under_a_plan_since_rewritten_is_not_reused_nor_verified(home: Path) -> None:
    plans = home / "plans"
    plans.mkdir()
    plan = plans / f"{TASK}.json"
    plan.write_text(json.dumps({"steps": [{"tool": "finish", "args": {"summary": "one"}}]}))
    evaluation = Evaluation(home, plans=plans)
    ran, _ = evaluation.run(resume=False)
    assert failed_checks(evaluation.results) == {}
    plan.write_text(json.dumps({"steps": [{"tool": "finish", "args": {"summary": "two"}}]}))
    assert "inputs" in failed_checks(evaluation.results)
    ran, _ = evaluation.run(resume=True)
    assert ran == [FIXTURE], "the plan changed: its run runs again"
    assert failed_checks(evaluation.results) == {}


def test_f1_inputs_that_cannot_be_rebuilt_here_are_not_verified(home: Path) -> None:
    evaluation = Evaluation(home)
    evaluation.run(resume=False)
    shutil.rmtree(evaluation.fixtures)
    why = failed_checks(evaluation.results)["inputs"]
    assert "cannot be rebuilt here" in why
    assert "not found" in why


def test_f8_a_generated_suite_rebuilt_elsewhere_is_still_the_same_task(home: Path) -> None:
    # Found while fixing F1: HumanEvalFix builds its tasks in a new temporary folder on
    # each invocation, and the absolute held-out path in the task hash made every resumed
    # run run again.
    held_out = home / "one" / "held"
    held_out.mkdir(parents=True)
    (held_out / "test_heldout.py").write_text("import unittest\n")
    first = case("good", held_out)
    elsewhere = home / "two" / "held"
    shutil.copytree(held_out, elsewhere)
    second = case("good", elsewhere)
    results = home / "results"
    journal = Journal(results, IDENTITY, resume=False)
    run_all([first], EvalOptions(trace_dir=results / TRACES_DIR), backend_factory=FakeBackend,
            run_task=sealing_run_task, journal=journal)  # fmt: skip
    assert Journal(results, IDENTITY, resume=True).finished(second, 0) is not None
    (elsewhere / "test_heldout.py").write_text("import unittest  # changed\n")
    assert Journal(results, IDENTITY, resume=True).finished(second, 0) is None


def test_f9_a_folder_with_a_harness_error_verifies_and_counts_it_failed(home: Path) -> None:
    # Found while fixing F1: a run the harness could not finish (no run folder, or one
    # whose sealed status is not HARNESS_ERROR) was "not backed", so no folder with a
    # harness error could ever verify.
    held = home / "held"
    held.mkdir()
    (held / "test_heldout.py").write_text("import unittest\n")
    results = home / "results"
    journal = Journal(results, IDENTITY, resume=False)
    records = run_all([case("good", held), case("crash", held)],
                      EvalOptions(trace_dir=results / TRACES_DIR), backend_factory=FakeBackend,
                      run_task=sealing_run_task, journal=journal)  # fmt: skip
    assert [record.status for record in records] == ["SUCCEEDED", "HARNESS_ERROR"]
    report = make_report(records, suite="fixtures", provider="scripted", model="",
                         runtime="runc", jobs=1, repeats=1, control=False,
                         started_at=dt.datetime.now(dt.UTC), wall_seconds=1.0,
                         **identity_of(journal))  # fmt: skip
    write_report(report, results)
    hashes = harness_task_hashes(results)
    checks = {c.name: c for c in verify_results(results, task_hashes=hashes)}
    assert all(check.ok for check in checks.values()), checks
    assert report.summary.passed == 1
    assert report.summary.harness_errors == 1


# F3: the report's headline. ------------------------------------------------------------


@pytest.fixture
def honest(home: Path) -> Evaluation:
    evaluation = Evaluation(home)
    evaluation.run(resume=False)
    assert failed_checks(evaluation.results) == {}
    return evaluation


def _report(evaluation: Evaluation) -> EvalReport:
    return EvalReport.model_validate_json((evaluation.results / "report.json").read_text())


@pytest.mark.parametrize(
    "update",
    [
        {"provider": "local", "notice": "Model results from provider 'local'."},
        {"model": "qwen2.5-coder-7b-instruct"},
        {"notice": "Model results from provider 'scripted'."},
        {"runtime": "runsc"},
        {"repeats": 0},
    ],
    ids=["provider", "model", "notice", "runtime", "repeats"],
)
def test_f3_a_scripted_folder_relabelled_is_not_verified(
    honest: Evaluation, update: dict[str, object]
) -> None:
    # The retest relabelled a scripted reference folder as a real model's: verified.
    write_report(_report(honest).model_copy(update=update), honest.results)
    assert "report" in failed_checks(honest.results)


def test_f3_a_per_task_table_or_report_md_edited_is_not_verified(honest: Evaluation) -> None:
    report = _report(honest)
    table = [report.tasks[0].model_copy(update={"passed": 1, "outcomes": ["pass"]})]
    write_report(report.model_copy(update={"tasks": table}), honest.results)
    assert "report" in failed_checks(honest.results)
    write_report(report, honest.results)
    markdown = honest.results / "report.md"
    markdown.write_text(to_markdown(report).replace("| 1 | 0 |", "| 1 | 1 |", 1))
    assert "report.md" in failed_checks(honest.results)
    markdown.unlink()
    assert "report.md" in failed_checks(honest.results)


# F4-F7: hostile folders. ---------------------------------------------------------------


def test_f4_non_finite_numbers_are_not_verified_not_a_traceback(
    honest: Evaluation, capsys: pytest.CaptureFixture[str]
) -> None:
    journal = honest.results / JOURNAL_FILE
    original = journal.read_text()
    header, *rest = original.splitlines()
    head = json.loads(header)
    head["identity"]["max_wall_seconds"] = math.inf
    journal.write_text(json.dumps(head) + "\n" + "\n".join(rest) + "\n")
    assert "journal" in failed_checks(honest.results)
    assert main(["verify", str(honest.results)]) == 1
    journal.write_text(original)
    report = _report(honest)
    durations = report.runs[0].durations.model_copy(update={"total_s": math.nan})
    run = report.runs[0].model_copy(update={"durations": durations})
    (honest.results / "report.json").write_text(
        report.model_copy(update={"runs": [run]}).model_dump_json()
    )
    assert "report" in failed_checks(honest.results)
    assert main(["verify", str(honest.results)]) == 1
    assert "Traceback" not in capsys.readouterr().err


def _returns_within(seconds: float, call: Callable[[], object], fifo: Path) -> bool:
    """Whether ``call`` returns within ``seconds``; a reader stuck on ``fifo`` is freed
    afterwards (a writer opens and closes it), so no thread is left behind."""
    done = threading.Event()

    def target() -> None:
        with contextlib.suppress(Exception):  # only whether it returns is asked here
            call()
        done.set()

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    returned = done.wait(seconds)
    while not done.is_set():
        with contextlib.suppress(OSError):  # no reader yet, or already gone
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        done.wait(0.1)
    thread.join()
    return returned


@pytest.fixture
def run_dir(honest: Evaluation) -> Path:
    (folder,) = (honest.results / TRACES_DIR).iterdir()
    return folder


@pytest.mark.parametrize("name", ["report.json", "evidence.json", "trace.jsonl", "result.json"])
def test_f5_a_fifo_in_place_of_a_file_does_not_hang_verify_or_resume(
    honest: Evaluation, run_dir: Path, name: str
) -> None:
    path = honest.results / name if name == "report.json" else run_dir / name
    path.unlink()
    os.mkfifo(path)
    assert _returns_within(30, lambda: verify_results(honest.results), path), "verify hung"
    if name != "report.json":
        assert _returns_within(30, lambda: honest.run(resume=True), path), "resume hung"


def test_f6_a_hard_linked_journal_is_not_appended_to(honest: Evaluation, home: Path) -> None:
    victim = home / "victim.jsonl"
    journal = honest.results / JOURNAL_FILE
    victim.write_text(journal.read_text())
    before = victim.read_text()
    journal.unlink()
    os.link(victim, journal)
    with pytest.raises(UsageError, match="another name"):
        Journal(honest.results, honest.identity, resume=True)
    assert victim.read_text() == before


@pytest.mark.parametrize("schema", [2.0, True, 3])
def test_f7_a_journal_schema_that_is_not_the_integer_is_refused(
    honest: Evaluation, schema: object
) -> None:
    journal = honest.results / JOURNAL_FILE
    header, *rest = journal.read_text().splitlines()
    head = json.loads(header)
    head["journal"] = schema
    journal.write_text(json.dumps(head) + "\n" + "\n".join(rest) + "\n")
    with pytest.raises(UsageError, match="is not an evaluation journal"):
        Journal(honest.results, honest.identity, resume=True)
    assert "journal" in failed_checks(honest.results)


def test_the_checks_print_one_line_each(
    honest: Evaluation, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["verify", str(honest.results)]) == 0
    out = capsys.readouterr().out
    assert out.strip().endswith("verified")
    assert {line.split()[1] for line in out.splitlines()[:-1]} >= {"inputs", "report.md"}


# The retest of SR-11's fixes (R1-R6): the inputs changed during a run, deep JSON in a
# run folder, a linked traces/, and what the report did not show. ------------------------


def test_r1_a_repository_changed_during_its_run_is_no_pass(home: Path) -> None:
    # The retest swapped a fixed fixture in for the run and the buggy one back before the
    # task hash was taken (after the run): a control pass of a buggy fixture verified.
    evaluation = Evaluation(home)
    fixed = evaluation.fixtures / FIXTURE / "fixed.txt"

    def swapping(config: RunConfig, **kwargs: object) -> RunResult:
        fixed.write_text("the bug, removed for the run only\n")
        try:
            return fixture_run_task(config, **kwargs)
        finally:
            fixed.unlink()  # the bug put back before the run is recorded

    journal = Journal(evaluation.results, evaluation.identity, resume=False)
    with tempfile.TemporaryDirectory() as scratch:
        (record,) = run_all(evaluation.cases(Path(scratch)),
                            EvalOptions(trace_dir=evaluation.results / TRACES_DIR),
                            backend_factory=FakeBackend, run_task=swapping,
                            journal=journal)  # fmt: skip
    assert not record.passed
    assert record.status == "HARNESS_ERROR"
    assert "changed during the run" in record.reason


class ForgeableJudge(FakeBackend):
    """Passes when the held-out module it is given says so (a module rewritten to pass)."""

    def run(self, request: SandboxRequest, cancel: CancelToken | None = None) -> SandboxResult:
        result = super().run(request, cancel)
        assert request.judge is not None
        if "FORGED" not in request.judge.source:
            return result
        passing = RunnerReport(runner="judge", tests_run=2, failures=0, errors=0)
        return result.model_copy(update={"exit_code": 0, "runner_report": passing})


def test_r2_held_out_tests_rewritten_during_a_run_are_not_the_ones_judged(home: Path) -> None:
    # The retest rewrote the held-out module to pass while the run was in flight and put it
    # back just after the judge had read it: a forged held-out pass verified.
    evaluation = Evaluation(home)
    with tempfile.TemporaryDirectory() as scratch:
        cases = evaluation.cases(Path(scratch))
        module = cases[0].held_out_dir / f"{cases[0].task.held_out.module}.py"
        copy = Path(scratch) / "held"
        shutil.copytree(cases[0].held_out_dir, copy)
        cases = [cases[0].model_copy(update={"held_out_dir": copy})]
        module = copy / module.name
        original = module.read_text()

        def rewriting(config: RunConfig, **kwargs: object) -> RunResult:
            module.write_text("# FORGED: every check passes\n")
            return fixture_run_task(config, **kwargs)

        class Restoring(ForgeableJudge):
            def run(
                self, request: SandboxRequest, cancel: CancelToken | None = None
            ) -> SandboxResult:
                try:
                    return super().run(request, cancel)
                finally:
                    module.write_text(original)  # back, once the judge has read it

        journal = Journal(evaluation.results, evaluation.identity, resume=False)
        (record,) = run_all(cases, EvalOptions(trace_dir=evaluation.results / TRACES_DIR),
                            backend_factory=Restoring, run_task=rewriting,
                            journal=journal)  # fmt: skip
    assert not record.held_out.passed, "the module judged is the one hashed"
    assert not record.passed


@pytest.mark.parametrize("name", ["evidence.json", "result.json", "trace.jsonl"])
def test_r3_deep_json_in_a_run_folder_is_not_verified_not_a_traceback(
    honest: Evaluation, run_dir: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (run_dir / name).write_text("[" * 3000 + "]" * 3000 + "\n")
    assert main(["verify", str(honest.results)]) == 1
    assert main(["verify", str(run_dir)]) == 1
    ran, _ = honest.run(resume=True)
    assert ran == [FIXTURE], "its run runs again"
    assert "Traceback" not in capsys.readouterr().err


def test_r5_a_linked_traces_folder_is_refused_and_nothing_written_through_it(
    honest: Evaluation, home: Path
) -> None:
    outside = home / "outside"
    outside.mkdir()
    traces = honest.results / TRACES_DIR
    shutil.rmtree(traces)
    traces.symlink_to(outside)
    with pytest.raises(UsageError, match="is not a plain folder"):
        honest.run(resume=True)
    assert list(outside.iterdir()) == []


def test_r6_the_report_shows_where_its_inputs_and_model_came_from(home: Path) -> None:
    # The retest replayed the reference plan from a loopback "OpenAI" server under a
    # frontier model's name: the report said "Model results from provider 'openai'" and
    # showed neither the endpoint nor the custom fixtures folder.
    plans = home / "plans"
    plans.mkdir()
    evaluation = Evaluation(home, plans=plans)
    evaluation.identity["provider_options"] = {
        **dict(evaluation.identity["provider_options"]),  # type: ignore[call-overload]
        "base_url": "http://127.0.0.1:18777/v1",
    }
    evaluation.run(resume=False)
    markdown = (evaluation.results / "report.md").read_text()
    for shown in (str(evaluation.fixtures), str(plans), "127.0.0.1:18777"):
        assert shown.replace("_", "\\_") in markdown
    assert failed_checks(evaluation.results) == {}
    report = _report(evaluation)
    assert report.identity == evaluation.identity
    hidden = dict(report.identity or {})
    hidden["fixtures_dir"] = None
    write_report(report.model_copy(update={"identity": hidden}), evaluation.results)
    assert "report" in failed_checks(evaluation.results)


def test_r4_a_run_spliced_in_from_another_folder_of_the_same_evaluation_is_refused(
    home: Path,
) -> None:
    # The retest ran one evaluation twice and moved a run's signed line and folder from one
    # results folder to the other: verified, and reused on resume (best of N, per run).
    first = Evaluation(home)
    first.run(resume=False)
    second = Evaluation(home)
    second.results = home / "second"
    second.run(resume=False)
    assert failed_checks(second.results) == {}
    theirs = (first.results / JOURNAL_FILE).read_text().splitlines()[1]
    header = (second.results / JOURNAL_FILE).read_text().splitlines()[0]
    (second.results / JOURNAL_FILE).write_text(header + "\n" + theirs + "\n")
    shutil.rmtree(second.results / TRACES_DIR)
    shutil.copytree(first.results / TRACES_DIR, second.results / TRACES_DIR)
    write_report(_report(first), second.results)  # the same identity: the same evaluation
    assert {"runs"} <= set(failed_checks(second.results))
    ran, _ = second.run(resume=True)
    assert ran == [FIXTURE], "a run of another results folder runs again"


# A second retest (R7-R11): the copy race, the plan other providers read, a control run
# with plans, inputs that read like the defaults, and undecodable names. -------------------


def test_r7_a_repository_swapped_between_the_controllers_hash_and_its_copy_is_no_pass(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The second retest swapped the fixed file in once the workspace folder appeared and
    # back once the copy held it: the sealed digest (taken before the copy) named the
    # buggy fixture, and a control pass verified.
    from sandbox_agent.workspace import workspace as workspace_module
    from sandbox_agent.workspace.workspace import Workspace

    evaluation = Evaluation(home)
    fixed = evaluation.fixtures / FIXTURE / "fixed.txt"
    hash_then = workspace_module.tree_sha256
    copy_then = workspace_module.copy_tree

    def hash_then_swap(*args: object, **kwargs: object) -> str:
        digest = hash_then(*args, **kwargs)  # type: ignore[arg-type]
        fixed.write_text("swapped in after the hash\n")
        return digest

    def copy_then_restore(*args: object, **kwargs: object) -> object:
        try:
            return copy_then(*args, **kwargs)  # type: ignore[arg-type]
        finally:
            fixed.unlink(missing_ok=True)

    def controller(config: RunConfig, **kwargs: object) -> RunResult:
        """The controller's start as it is (``Workspace.create``), racing the swap."""
        assert config.fixtures_dir is not None
        with monkeypatch.context() as patch:
            patch.setattr(workspace_module, "tree_sha256", hash_then_swap)
            patch.setattr(workspace_module, "copy_tree", copy_then_restore)
            workspace = Workspace.create(config.fixtures_dir / str(config.fixture))
        with workspace:
            fixed_copy = (workspace.base / "fixed.txt").is_file()
            result = fixture_run_task(config, **kwargs)
            integrity = result.fixture.model_copy(
                update={
                    "sha256_before": workspace.sha256_before,
                    "sha256_copy": workspace.sha256_copy,
                }
            )
        assert fixed_copy, "the race worked: the copy holds the swapped-in file"
        return result.model_copy(update={"fixture": integrity, "status": "SUCCEEDED"})

    journal = Journal(evaluation.results, evaluation.identity, resume=False)
    with tempfile.TemporaryDirectory() as scratch:
        (record,) = run_all(evaluation.cases(Path(scratch)),
                            EvalOptions(trace_dir=evaluation.results / TRACES_DIR),
                            backend_factory=FakeBackend, run_task=controller,
                            journal=journal)  # fmt: skip
    assert not fixed.exists()
    assert record.status == "HARNESS_ERROR"
    assert "changed while" in record.reason


def test_r8_every_provider_replays_the_private_copy_of_its_plan(home: Path) -> None:
    # mock-adversarial (like every provider but scripted) read the plan from its original
    # path, after the copy was hashed: a plan swapped meanwhile ran unseen.
    evaluation = Evaluation(home)
    given: list[str | None] = []

    def recording(config: RunConfig, **kwargs: object) -> RunResult:
        given.append(config.provider_options.reference_plan_path)
        return fixture_run_task(config, **kwargs)

    journal = Journal(evaluation.results, evaluation.identity, resume=False)
    with tempfile.TemporaryDirectory() as scratch:
        cases = evaluation.cases(Path(scratch))
        original = str(cases[0].plan)
        (record,) = run_all(cases, EvalOptions(provider="mock-adversarial",
                                               trace_dir=evaluation.results / TRACES_DIR),
                            backend_factory=FakeBackend, run_task=recording,
                            journal=journal)  # fmt: skip
    assert given[0] is not None
    assert given[0] != original, "the run replays the copy that was hashed"
    assert record.config["plan"] == original, "the record names the plan, not its copy"


def test_r9_a_control_run_with_plans_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # --no-fix with --plans holding the reference plans made a "control run (no fix)"
    # that passed 3/3, and verified.
    argv = ["eval", "--tasks", TASK, "--no-fix", "--plans", str(tmp_path),
            "--results-dir", str(tmp_path / "r")]  # fmt: skip
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert "--no-fix" in error
    assert "--plans" in error
    assert not (tmp_path / "r").exists()


def test_r10_inputs_named_like_the_defaults_do_not_read_like_them(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Folders named "of the project" and "of the tasks" read, in report.md, word for word
    # like the project's fixtures and the tasks' own plans.
    monkeypatch.chdir(home)
    (home / "of the project").mkdir()
    shutil.copytree(default_fixtures_dir() / FIXTURE, home / "of the project" / FIXTURE)
    evaluation = Evaluation(home)
    evaluation.identity["fixtures_dir"] = "of the project"
    evaluation.fixtures = Path("of the project")
    evaluation.run(resume=False)
    default = Evaluation(home / "default")
    default.identity["fixtures_dir"] = None
    markdown = (evaluation.results / "report.md").read_text()
    default_line = to_markdown(
        _report(evaluation).model_copy(update={"identity": default.identity})
    )
    inputs = next(line for line in markdown.splitlines() if line.startswith("- inputs:"))
    assert inputs not in default_line
    assert "'of the project'" in inputs


def test_r11_undecodable_names_are_one_line_not_a_traceback(
    honest: Evaluation, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A non-UTF-8 --fixtures-dir crashed eval after every run, leaving no report; a lone
    # surrogate in the journal's identity crashed verify's printing.
    undecodable = os.fsdecode(bytes(tmp_path) + b"/fx\xff")
    argv = ["eval", "--tasks", TASK, "--fixtures-dir", undecodable,
            "--results-dir", str(tmp_path / "r")]  # fmt: skip
    assert main(argv) == 2
    assert "UTF-8" in capsys.readouterr().err
    journal = honest.results / JOURNAL_FILE
    header, *rest = journal.read_text().splitlines()
    journal.write_text(header.replace('"fixtures_dir": "', '"fixtures_dir": "\\ud800', 1)
                       + "\n" + "\n".join(rest) + "\n")  # fmt: skip
    assert main(["verify", str(honest.results)]) == 1
    assert "Traceback" not in capsys.readouterr().err


# A third retest (R12): a public key that never ends or never opens. ---------------------


def test_r12_a_public_key_that_is_no_file_is_one_line(
    honest: Evaluation, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # verify --public-key on a FIFO hung; on /dev/zero it read until the kernel killed it
    # (not tried here: on the code before the fix, that would take the machine's memory).
    key = home / "key.fifo"
    os.mkfifo(key)
    code: list[int] = []
    argv = ["verify", str(honest.results), "--public-key", str(key)]
    assert _returns_within(30, lambda: code.append(main(argv)), key), "verify hung"
    assert code == [2]
    error = capsys.readouterr().err.strip()
    assert "public key" in error
    assert "\n" not in error
