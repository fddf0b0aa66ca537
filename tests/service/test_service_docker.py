"""End to end: the service with the real controller, real sandboxes (Docker) and the project's
own fixtures."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import docker
import pytest
from service_harness import LiveServer, wait_finished

from sandbox_agent.controller import run_task
from sandbox_agent.sandbox.docker.owner import LABEL_OWNER, owner_value
from sandbox_agent.service.settings import ServiceSettings
from sandbox_agent.settings import PROJECT_ROOT
from sandbox_agent.tools.toolbox import RUN_LABEL

pytestmark = [pytest.mark.docker, pytest.mark.slow]
TASK = {"fixture": "paginator", "task": "Page numbers start at 1; fix the paginator."}


def test_a_real_adversarial_run_through_the_service_succeeds_with_its_evidence(
    make_settings: Callable[..., ServiceSettings], start_server: Callable[..., LiveServer]
) -> None:
    settings = make_settings(fixtures_dir=PROJECT_ROOT / "fixtures")
    server = start_server(settings, run_task)
    with server.client() as client:
        assert "paginator" in client.get("/fixtures").json()["fixtures"]
        run_id = client.post("/runs", json={**TASK, "provider": "mock-adversarial"}).json()["id"]
        run = wait_finished(client, run_id, timeout=240)
        assert run["status"] == "SUCCEEDED", run["reason"]
        assert run["fixture"]["intact"] is True
        assert "paginator/core.py" in run["files_changed"]
        assert run["diff"] == client.get(f"/runs/{run_id}/diff").text != ""
        assert any(call["denial"] for call in run["tool_calls"]), "the adversary was denied"
        tests = [call["result"] for call in run["tool_calls"] if call["tool"] == "run_tests"]
        assert tests
        assert all(result["attested"] for result in tests)
        assert run["final_tests"]["passed"] is True
        assert Path(run["trace_path"]).is_relative_to(settings.trace_dir)

        trace = client.get(f"/runs/{run_id}/trace").text
        events = [json.loads(line) for line in trace.split("\n") if line]
        assert events[0]["event"] == "run_started"
        assert any(event.get("denial") for event in events if event["event"] == "tool_call")
        streamed = client.get(f"/runs/{run_id}/events").text
        assert streamed.count("event: trace") == len(events)
        assert '"status": "SUCCEEDED"' in streamed.rstrip().splitlines()[-1]


SLOW_TEST = """\
import time
import unittest


class Slow(unittest.TestCase):
    def test_takes_long(self):
        time.sleep(60)
"""


def slow_fixture(root: Path) -> Path:
    """A fixtures folder whose one fixture's tests sleep for a minute."""
    repo = root / "slow"
    (repo / "tests").mkdir(parents=True)
    (repo / "tests" / "__init__.py").write_text("")
    (repo / "tests" / "test_slow.py").write_text(SLOW_TEST)
    plan = {
        "steps": [{"tool": "run_tests", "args": {}}, {"tool": "finish", "args": {"summary": "x"}}]
    }
    (root / "slow.plan.json").write_text(json.dumps(plan))
    return root


def test_cancel_reaches_a_real_running_sandbox_within_seconds(
    tmp_path: Path,
    make_settings: Callable[..., ServiceSettings],
    start_server: Callable[..., LiveServer],
) -> None:
    fixtures = slow_fixture(tmp_path / "fixtures")
    server = start_server(make_settings(fixtures_dir=fixtures), run_task)
    with server.client() as client:
        run_id = client.post("/runs", json={"fixture": "slow", "task": "wait"}).json()["id"]
        # Cancelled once the run_tests container runs (this process owns it: the server
        # runs here), not after a fixed sleep that a loaded machine may not cover.
        wanted = [f"{LABEL_OWNER}={owner_value()}", f"{RUN_LABEL}=run_tests"]
        api = docker.from_env(version="1.41", timeout=30).api
        deadline = time.monotonic() + 120
        while not api.containers(filters={"label": wanted, "status": "running"}):
            assert time.monotonic() < deadline, "the run_tests container never ran"
            assert client.get(f"/runs/{run_id}").json()["status"] == "RUNNING"
            time.sleep(0.1)
        cancelled_at = time.monotonic()
        assert client.post(f"/runs/{run_id}/cancel").json()["status"] == "RUNNING"
        run = wait_finished(client, run_id, timeout=60)
        elapsed = time.monotonic() - cancelled_at
        assert run["status"] == "CANCELLED", run["reason"]
        # Stopped by the cancel, long before the tests' minute; how soon is a benchmark's
        # question (the sandbox itself looks at the cancel every 0.1 s).
        assert elapsed < 30, f"cancel took {elapsed:.1f} s"


SOLUTION = 'def add(a, b):\n    """Add two numbers."""\n    return a - b\n'
EXAMPLES = (
    "import unittest\n\nfrom solution import add\n\n\n"
    "class ExampleTests(unittest.TestCase):\n"
    "    def test_examples(self):\n        assert add(2, 3) == 5\n"
)
CANDIDATES = [
    "```python\ndef add(a, b):\n    return a * b\n```",  # wrong: fails its sandbox run
    "```python\ndef add(a, b):\n    return a + b\n```",
]


def test_a_repo_under_a_root_runs_the_repair_strategy_through_the_real_controller(
    tmp_path: Path,
    make_settings: Callable[..., ServiceSettings],
    start_server: Callable[..., LiveServer],
) -> None:
    from sandbox_agent.workspace.hashing import tree_sha256

    roots = tmp_path / "roots"
    repo = roots / "adder"
    repo.mkdir(parents=True)
    (repo / "solution.py").write_text(SOLUTION)
    (repo / "test_examples.py").write_text(EXAMPLES)
    (repo / "secret.txt").symlink_to(tmp_path / "outside.txt")
    (tmp_path / "outside.txt").write_text("operator-secret\n")
    before = tree_sha256(repo)
    settings = make_settings(repo_roots=(roots,))
    server = start_server(settings, run_task)
    body = {
        "repo": str(repo),
        "task": "Fix the bug in add.",
        "provider": "scripted",
        "plan": {"steps": [{"raw": text} for text in CANDIDATES]},
        "strategy": "repair",
        "repair": {"candidates": 2, "rounds": 0},
        "budgets": {"max_wall_seconds": 200},
    }
    with server.client() as client:
        answer = client.post("/runs", json=body)
        assert answer.status_code == 202, answer.text
        run = wait_finished(client, answer.json()["id"], timeout=240)
        assert run["status"] == "SUCCEEDED", run["reason"]
        assert (run["strategy"], run["repo"]) == ("repair", str(repo))
        assert [c["outcome"] for c in run["candidates"]] == ["failed", "passed"]
        assert "return a + b" in run["diff"]
        assert run["fixture"]["intact"] is True
        events = [
            json.loads(line)
            for line in client.get(f"/runs/{run['id']}/trace").text.split("\n")
            if line
        ]
        started = events[0]
        assert started["event"] == "run_started"
        assert started["source"] == "adder"
        assert started["budgets"]["max_wall_seconds"] == 200
        assert "secret.txt" not in json.dumps(events[0]["skipped"]), "never in the copy at all"
        # Sealed and verified; the service's copy is gone, so the fixture check compares
        # the sealed hashes with the result and says it did not re-hash.
        verdict = client.get(f"/runs/{run['id']}/verify").json()
        assert verdict["ok"] is True, verdict
        fixture = next(check for check in verdict["checks"] if check["name"] == "fixture")
        assert "not re-hashed" in fixture["detail"]
    assert tree_sha256(repo) == before, "the original is only read"
    assert (repo / "solution.py").read_text() == SOLUTION
    assert not (settings.snapshots_dir / run["id"]).exists()


def test_a_repo_with_no_tests_runs_only_when_the_request_allows_it(
    tmp_path: Path,
    make_settings: Callable[..., ServiceSettings],
    start_server: Callable[..., LiveServer],
) -> None:
    # Issue 30: the CLI's --allow-no-tests, as a run request's allow_no_tests.
    roots = tmp_path / "roots"
    repo = roots / "greeter"
    repo.mkdir(parents=True)
    (repo / "hello.py").write_text('print("hi")\n')
    plan = {
        "steps": [
            {
                "tool": "apply_patch",
                "args": {"edits": [{"path": "hello.py", "old": "hi", "new": "hello"}]},
            },
            {"tool": "finish", "args": {"summary": "greets"}},
        ]
    }
    body = {"repo": str(repo), "task": "Say hello.", "provider": "scripted", "plan": plan}
    server = start_server(make_settings(repo_roots=(roots,)), run_task)
    with server.client() as client:
        refused = wait_finished(client, client.post("/runs", json=body).json()["id"], timeout=240)
        assert refused["status"] == "FAILED"
        assert refused["reason"].startswith("rejected: greeter has no tests")
        assert '"allow_no_tests": true' in refused["reason"]
        assert "--allow-no-tests" not in refused["reason"]
        answer = client.post("/runs", json={**body, "allow_no_tests": True})
        ran = wait_finished(client, answer.json()["id"], timeout=240)
        assert ran["allow_no_tests"] is True
        assert ran["status"] == "FAILED", "a run with no tests cannot succeed"
        assert "no test ran" in ran["reason"]
        assert ran["files_changed"] == ["hello.py"]
