"""SR-12 D5: ``verify RESULTS_DIR`` reads, it does not fetch.

With no signed line in a results folder's journal, ``verify`` still rebuilt the inputs
from the journal header's identity, and for the realrepos suite made dependency
environments from the header's ``deps.index_url``: the reviewer's host sent a request to
the forger's address before answering "NOT verified". Each test here was written against
the code before the fix and failed there.

The realrepos project is a tiny one made in the test (its sdist planted, hash-checked, in
the sdist cache; the task file read in its place), declaring one dependency, so that
making its environment would ask the index. The index is a loopback server that answers
404 and counts what reached it. The runs are fake (no Docker), sealed as the
controller seals them.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import http.server
import io
import json
import shutil
import tarfile
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_eval_executor import seal_result

from sandbox_agent.cli import main
from sandbox_agent.controller.models import (
    BudgetUsed,
    FinalTests,
    FixtureIntegrity,
    RunConfig,
    RunResult,
)
from sandbox_agent.deps.models import DepsOptions
from sandbox_agent.errors import SetupError
from sandbox_agent.evals.realrepos import fetch
from sandbox_agent.evals.realrepos import suite as realrepos_suite
from sandbox_agent.evals.realrepos.build import PYTEST_MARKER
from sandbox_agent.evals.realrepos.taskfile import TaskFile
from sandbox_agent.evals.results.journal import Journal
from sandbox_agent.evals.results.journal_check import JOURNAL_FILE
from sandbox_agent.evals.results.records import TRACES_DIR
from sandbox_agent.evals.results.report import make_report, write_report
from sandbox_agent.evals.running.executor import run_all
from sandbox_agent.evals.running.options import EvalOptions
from sandbox_agent.evals.tasks.suites import SuiteOptions, build_cases
from sandbox_agent.sandbox.base import (
    CancelToken,
    RunnerReport,
    SandboxBackend,
    SandboxRequest,
    SandboxResult,
)
from sandbox_agent.settings import state_home
from sandbox_agent.workspace import WorkspaceLimits
from sandbox_agent.workspace.workspace import source_sha256

PROJECT, VERSION = "tinyproj", "1.0"
ROOT = f"{PROJECT}-{VERSION}"
TASK_ID = f"realrepos-{PROJECT}-001"
SOURCES = {
    "tiny.py": "def add(a, b):\n    return a + b\n",
    "test_tiny.py": "from tiny import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    "requirements.txt": "leftpad==1.0\n",
}


class Index:
    """A package index on loopback that has nothing: each request is counted, then 404."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        seen = self.requests

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                seen.append(self.path)
                self.send_error(404)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/simple"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)


@pytest.fixture
def index() -> Iterator[Index]:
    server = Index()
    yield server
    server.close()


def _sdist() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, text in SOURCES.items():
            data = text.encode()
            member = tarfile.TarInfo(f"{ROOT}/{name}")
            member.size, member.mode = len(data), 0o644
            tar.addfile(member, io.BytesIO(data))
    return buffer.getvalue()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This host's state under ``tmp_path``, the tiny project's sdist in its cache, and
    a task file of one task of it read as the realrepos suite's."""
    monkeypatch.setenv("SANDBOX_AGENT_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("SANDBOX_AGENT_DEPS_HOME", str(tmp_path / "eval-deps"))
    data = _sdist()
    sha256 = hashlib.sha256(data).hexdigest()
    cached = state_home() / "realrepos" / "sdists" / f"{sha256}.tar.gz"
    cached.parent.mkdir(parents=True)
    cached.write_bytes(data)
    task_file = TaskFile.model_validate(
        {
            "schema_version": 1,
            "suite_version": 1,
            "seed": 1,
            "generated": {"by": "this test"},
            "projects": [
                {
                    "name": PROJECT,
                    "version": VERSION,
                    "url": f"https://files.pythonhosted.org/packages/00/00/{ROOT}.tar.gz",
                    "sha256": sha256,
                    "licence": "MIT",
                    "root": ROOT,
                    "runner": "pytest",
                    "sources": ["tiny.py"],
                    "conftest": PYTEST_MARKER,
                    "baseline_tests": 1,
                    "resolution": f"leftpad==1.0 --hash=sha256:{'0' * 64}\n",
                }
            ],
            "tasks": [
                {
                    "id": TASK_ID,
                    "project": PROJECT,
                    "path": "tiny.py",
                    "function": "add",
                    "kind": "flip_comparison",
                    "line": 2,
                    "bug": {"old": "a + b", "new": "a - b"},
                    "failing": [{"id": "test_tiny.py::test_add", "message": "assert -1 == 3"}],
                }
            ],
        }
    )
    monkeypatch.setattr(realrepos_suite, "load", lambda path=None: task_file)
    return tmp_path


class SuiteBackend(SandboxBackend):
    """The project's held-out suite, passed (nothing runs)."""

    def run(self, request: SandboxRequest, cancel: CancelToken | None = None) -> SandboxResult:
        return SandboxResult(
            status="completed",
            reason="",
            started=True,
            runtime="runc",
            attested=True,
            exit_report_valid=True,
            exit_code=0,
            runner_report=RunnerReport(runner="pytest", tests_run=1, failures=0, errors=0),
        )

    def reap(self) -> list[str]:
        return []


def realrepos_run_task(config: RunConfig, **kwargs: object) -> RunResult:
    """A controller that changes nothing, sealed with its repository's real digest."""
    assert config.repo is not None
    digest = source_sha256(config.repo, WorkspaceLimits())
    on_final = kwargs.get("on_final_workspace")
    assert callable(on_final)
    on_final(config.repo)
    result = RunResult(
        run_id=config.run_id or "r",
        status="SUCCEEDED",
        reason="",
        diff="",
        files_changed=[],
        final_tests=FinalTests(passed=True, tests_run=1, failures=0, status="completed"),
        budget_used=BudgetUsed(iterations=1, tool_calls=1),
        fixture=FixtureIntegrity(intact=True, sha256_before=digest, sha256_after=digest),
        trace_path="",
        tool_calls=[],
        provider=config.provider,
    )
    return seal_result(config, result)


def identity(index_url: str) -> dict[str, object]:
    """The journal identity ``eval --suite realrepos --deps-index-url URL`` writes."""
    options = EvalOptions(deps=DepsOptions(index_url=index_url))
    return {
        "suite": "realrepos",
        "control": False,
        "dataset": None,
        "plans": None,
        "fixtures_dir": None,
        **options.model_dump(mode="json", exclude={"jobs", "repeats", "trace_dir"}),
    }


def evaluate(home: Path, index_url: str) -> Path:
    """A realrepos evaluation whose journal names ``index_url``, signed with this host's
    key; its results folder. (Its cases are made without an environment: what the task
    hashes cover does not depend on one.)"""
    results = home / "results"
    journal = Journal(results, identity(index_url), resume=False)
    off = DepsOptions(mode="off")
    with tempfile.TemporaryDirectory() as scratch:
        cases = build_cases("realrepos", SuiteOptions(task_ids=[TASK_ID], deps=off), Path(scratch))
        records = run_all(cases, EvalOptions(trace_dir=results / TRACES_DIR, deps=off),
                          backend_factory=SuiteBackend, run_task=realrepos_run_task,
                          journal=journal)  # fmt: skip
    report = make_report(records, suite="realrepos", provider="scripted", model="",
                         runtime="runc", jobs=1, repeats=1, control=False,
                         started_at=dt.datetime.now(dt.UTC), wall_seconds=1.0,
                         identity=journal.identity)  # fmt: skip
    write_report(report, results)
    return results


def verify(results: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    capsys.readouterr()
    code = main(["verify", str(results)])
    return code, capsys.readouterr().out.splitlines()


def test_d5_an_unsigned_realrepos_header_is_not_verified_and_nothing_is_fetched(
    home: Path, index: Index, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    results = evaluate(home, "https://pypi.org/simple")
    # The forger's folder: the journal's header only, no signed line, naming their index.
    header = json.loads((results / JOURNAL_FILE).read_text().splitlines()[0])
    header["identity"] = identity(index.url)
    (results / JOURNAL_FILE).write_text(json.dumps(header) + "\n")
    reviewer_deps = home / "reviewer-deps"
    monkeypatch.setenv("SANDBOX_AGENT_DEPS_HOME", str(reviewer_deps))
    code, lines = verify(results, capsys)
    assert index.requests == [], "verify sent requests to the header's index"
    assert not reviewer_deps.exists(), "verify made (part of) a dependency environment"
    assert code == 1
    assert lines[-1].startswith("NOT verified: journal"), lines
    assert any(line.startswith("FAIL journal") and "no run signed" in line for line in lines), lines


def test_d5_a_signed_realrepos_evaluation_verifies_without_the_network(
    home: Path, index: Index, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    results = evaluate(home, index.url)
    reviewer_deps = home / "reviewer-deps"
    monkeypatch.setenv("SANDBOX_AGENT_DEPS_HOME", str(reviewer_deps))
    code, lines = verify(results, capsys)
    assert index.requests == [], "verify sent requests to the evaluation's index"
    assert not reviewer_deps.exists(), "verify made (part of) a dependency environment"
    assert (code, lines[-1]) == (0, "verified"), lines
    # A reviewer's host without the project's sdist: that part is not checkable here,
    # and says so; nothing is fetched.
    downloads: list[str] = []

    def download(project: object, target: Path) -> None:
        downloads.append(str(target))
        raise SetupError("no download in this test")

    monkeypatch.setattr(fetch, "_download", download)
    shutil.rmtree(state_home() / "realrepos")
    code, lines = verify(results, capsys)
    assert (downloads, index.requests) == ([], [])
    assert (code, lines[-1]) == (1, "NOT verified: inputs"), lines
    assert any(line.startswith("FAIL inputs") and "not on this host" in line for line in lines)
