"""``view`` reads its folder and nothing else: links, ``..``, absolute keys, paths named by
hostile files, FIFOs and oversized files are refused with one line; limits have flags."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from viewer_harness import REAL_MODEL_KEY, copy_real_model_run, result_dict, write_run

from sandbox_agent.httpguard import CONTENT_SECURITY_POLICY
from sandbox_agent.viewer.app import create_view_app
from sandbox_agent.viewer.settings import ViewSettings

STARTED = {"event": "run_started", "time": "2026-12-01T10:00:00.000Z", "task": "t", "seq": 0}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "served"
    folder.mkdir()
    return folder


def client_for(root: Path, **settings: Any) -> Iterator[TestClient]:
    app = create_view_app(ViewSettings(root=root, **settings))
    with TestClient(app, base_url="http://127.0.0.1:8100") as client:
        yield client


@pytest.fixture
def client(root: Path) -> Iterator[TestClient]:
    yield from client_for(root, public_key=REAL_MODEL_KEY)


def test_a_recorded_real_model_run_is_listed_read_and_verified(
    root: Path, client: TestClient
) -> None:
    copy_real_model_run(root)
    home = client.get("/api/view").json()
    assert home["mode"] == "view"
    assert [run["key"] for run in home["runs"]] == ["real-model-run"]
    listed = home["runs"][0]
    assert listed["provider"] == "local"
    assert listed["status"] == "FAILED"
    assert listed["model"] == "qwen2.5-coder-1.5b-instruct-q4_k_m"
    assert listed["started"].endswith("Z")
    page = client.get("/api/run", params={"key": "real-model-run"}).json()
    replies = [event["reply"] for event in page["events"] if event["event"] == "model_turn"]
    assert replies
    assert all('"tool"' in reply for reply in replies)
    assert page["verdict"]["ok"] is True, page["verdict"]
    fixture = next(check for check in page["verdict"]["checks"] if check["name"] == "fixture")
    assert "not re-hashed" in fixture["detail"]
    assert page["problems"] == []


def test_the_seal_fails_without_the_signer_key_and_on_a_changed_trace(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = copy_real_model_run(root)
    monkeypatch.setenv("SANDBOX_AGENT_HOME", str(tmp_path / "state"))  # no host key here
    for client in client_for(root):
        verdict = client.get("/api/run", params={"key": "real-model-run"}).json()["verdict"]
        assert verdict["ok"] is False
        (signature,) = [check for check in verdict["checks"] if check["name"] == "signature"]
        assert "no trusted public key" in signature["detail"]
    lines = (run / "trace.jsonl").read_text().splitlines()
    lines[2] = lines[2].replace('"seq": 2,', '"seq": 2, "changed": true,')
    (run / "trace.jsonl").write_text("\n".join(lines) + "\n")
    for client in client_for(root, public_key=REAL_MODEL_KEY):
        verdict = client.get("/api/run", params={"key": "real-model-run"}).json()["verdict"]
        failed = {check["name"] for check in verdict["checks"] if not check["ok"]}
        assert "trace_chain" in failed
        assert verdict["first_bad_event"]["line"] == 4


def test_links_are_never_followed(root: Path, tmp_path: Path, client: TestClient) -> None:
    outside = tmp_path / "outside"
    copy_real_model_run(outside, "secret-run")
    (root / "linked-run").symlink_to(outside / "secret-run")
    inside = write_run(root / "inside", [STARTED], result_dict())
    (inside / "trace.jsonl").unlink()
    (inside / "trace.jsonl").symlink_to(outside / "secret-run" / "trace.jsonl")
    (inside / "diff.patch").symlink_to("/etc/passwd")
    home = client.get("/api/view").json()
    assert [run["key"] for run in home["runs"]] == ["inside"]
    assert client.get("/api/run", params={"key": "linked-run"}).status_code == 404
    page = client.get("/api/run", params={"key": "inside"}).json()
    assert page["events"] == []
    assert page["diff"] == ""
    assert any("symbolic link" in problem for problem in page["problems"])
    text = json.dumps(page)
    assert "root:" not in text
    assert "apply_patch" not in text
    assert not page["verdict"]["ok"]


@pytest.mark.parametrize(
    "key",
    ["..", "../outside", "/etc", "inside/../..", "inside//x", ".", "a/./b", "x\x00y", "%2e%2e"],
)
def test_keys_that_leave_the_folder_are_refused(
    root: Path, tmp_path: Path, client: TestClient, key: str
) -> None:
    copy_real_model_run(tmp_path, "outside")
    answer = client.get("/api/run", params={"key": key})
    assert answer.status_code == 404
    assert "\n" not in answer.json()["detail"]


def test_paths_named_by_hostile_files_are_never_opened(
    root: Path, tmp_path: Path, client: TestClient
) -> None:
    # A run outside the folder, named by a report's trace_path: never linked, never read.
    copy_real_model_run(tmp_path, "outside-run")
    report_dir = root / "results"
    (report_dir / "traces").mkdir(parents=True)
    report = json.loads((Path(__file__).parent / "data" / "report.json").read_text())
    report["runs"][0]["trace_path"] = str(tmp_path / "outside-run" / "trace.jsonl")
    report["runs"][1]["trace_path"] = "../../../../outside-run/trace.jsonl"
    (report_dir / "report.json").write_text(json.dumps(report))
    page = client.get("/api/eval", params={"key": "results"}).json()
    assert page["problems"] == []
    assert page["run_keys"] == [None, None, None]
    # The same name inside the report's own traces/ is linked.
    copy_real_model_run(report_dir / "traces", "outside-run")
    assert client.get("/api/eval", params={"key": "results"}).json()["run_keys"][0] == (
        "results/traces/outside-run"
    )
    # A result.json's trace_path is shown as recorded, never opened.
    write_run(root / "run", [STARTED], result_dict(trace_path="/etc/shadow"))
    page = client.get("/api/run", params={"key": "run"}).json()
    assert page["result"]["trace_path"] == "/etc/shadow"
    assert [event["event"] for event in page["events"]] == ["run_started"]


def test_a_fifo_is_refused_without_waiting(root: Path, client: TestClient) -> None:
    run = write_run(root / "run", [STARTED], result_dict())
    os.mkfifo(run / "diff.patch")
    page = client.get("/api/run", params={"key": "run"}).json()
    assert any("FIFO" in problem for problem in page["problems"]), page["problems"]


def test_bad_files_are_one_line_problems(root: Path, client: TestClient) -> None:
    write_run(root / "not-json", ["{not json", STARTED], None)
    (root / "not-json" / "result.json").write_text("{]")
    write_run(root / "wrong-shape", [STARTED], {"status": "SUCCEEDED"})
    write_run(root / "dup-keys", [STARTED], None)
    (root / "dup-keys" / "result.json").write_text('{"status": "FAILED", "status": "SUCCEEDED"}')
    for key, words in (
        ("not-json", "is not JSON"),
        ("wrong-shape", "does not hold what the project writes"),
        ("dup-keys", "is not JSON"),
    ):
        page = client.get("/api/run", params={"key": key}).json()
        assert page["result"] is None
        assert any(words in problem for problem in page["problems"]), (key, page["problems"])
        assert all("\n" not in problem and len(problem) <= 300 for problem in page["problems"])
    page = client.get("/api/run", params={"key": "not-json"}).json()
    assert page["events"][0] == {
        "event": "unreadable_line",
        "line": 1,
        "why": page["events"][0]["why"],
    }
    assert page["events"][1]["event"] == "run_started"


def test_limits_have_flags(root: Path) -> None:
    events = [STARTED, *({"event": "note", "seq": n} for n in range(1, 30))]
    write_run(root / "long", events, result_dict())
    (root / "long" / "diff.patch").write_text("x" * 5000)
    for client in client_for(root, max_events=10, max_file_bytes=4096):
        page = client.get("/api/run", params={"key": "long"}).json()
        assert len(page["events"]) == 10
        assert page["events_total"] == 30
        assert any("--max-events" in problem for problem in page["problems"])
        assert any("--max-file-bytes" in problem for problem in page["problems"])
    write_run(root / "a" / "b" / "run", [STARTED], result_dict())
    for client in client_for(root, max_depth=2):
        assert "a/b/run" not in [run["key"] for run in client.get("/api/view").json()["runs"]]
    for client in client_for(root, max_runs=1):
        home = client.get("/api/view").json()
        assert len(home["runs"]) == 1
        assert home["complete"] is False


def _started(time: str) -> dict[str, Any]:
    return {**STARTED, "time": time}


def test_runs_and_evaluations_are_listed_newest_first(root: Path) -> None:
    # view listed oldest first and serve newest first (issue 30): both newest first now.
    for name in ("20261201T090000Z-aaa", "20261203T090000Z-ccc", "20261202T090000Z-bbb"):
        day = name[6:8]
        write_run(root / name, [_started(f"2026-12-{day}T09:00:00.000Z")], None)
    # More runs than --max-runs: the newest are shown (run and eval name their folders
    # by their UTC start, so the scan takes the names from the last).
    for client in client_for(root, max_runs=2):
        home = client.get("/api/view").json()
        assert home["complete"] is False
        assert [run["key"] for run in home["runs"]] == [
            "20261203T090000Z-ccc",
            "20261202T090000Z-bbb",
        ]
    nested = root / "results" / "20261204T090000Z" / "traces" / "ddd"
    write_run(nested, [_started("2026-12-04T09:00:00.000Z")], None)
    write_run(root / "no-trace-start", ["not JSON"], None)
    report = json.loads((Path(__file__).parent / "data" / "report.json").read_text())
    for name, day in (("older", "01"), ("newer", "02")):
        (root / "evals" / name).mkdir(parents=True)
        (root / "evals" / name / "report.json").write_text(
            json.dumps({**report, "started_at": f"2026-11-{day}T00:00:00+00:00"})
        )
    for client in client_for(root):
        home = client.get("/api/view").json()
        assert [run["key"] for run in home["runs"]] == [
            "results/20261204T090000Z/traces/ddd",
            "20261203T090000Z-ccc",
            "20261202T090000Z-bbb",
            "20261201T090000Z-aaa",
            "no-trace-start",
        ]
        assert [item["key"] for item in home["evals"]] == ["evals/newer", "evals/older"]


def test_the_guard(root: Path, client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200
    assert page.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert "script-src 'self'" in CONTENT_SECURITY_POLICY
    assert (
        client.get("/static/app.js")
        .headers["content-type"]
        .startswith(("text/javascript", "application/javascript"))
    )
    assert client.post("/api/view").status_code == 405
    assert client.delete("/api/run", params={"key": "x"}).status_code == 405
    foreign = client.get("/api/view", headers={"Host": "evil.example:8100"})
    assert foreign.status_code == 421
    assert "DNS rebinding" in foreign.json()["detail"]
    assert client.get("/api/view", headers={"Host": "localhost:8100"}).status_code == 200
    assert client.get("/api/view", headers={"Host": "[::1]:8100"}).status_code == 200
    assert client.get("/docs").status_code == 404
    assert client.get("/static/../viewer/app.py").status_code == 404


def test_an_evaluation_folder_is_listed_and_linked(root: Path, client: TestClient) -> None:
    results = root / "results" / "20261201T100000Z"
    (results / "traces").mkdir(parents=True)
    report = json.loads((Path(__file__).parent / "data" / "report.json").read_text())
    (results / "report.json").write_text(json.dumps(report))
    names = [Path(record["trace_path"]).parent.name for record in report["runs"]]
    copy_real_model_run(results / "traces", names[0])
    home = client.get("/api/view").json()
    assert [item["key"] for item in home["evals"]] == ["results/20261201T100000Z"]
    assert home["evals"][0]["summary"]["runs"] == len(report["runs"])
    assert [run["key"] for run in home["runs"]] == [f"results/20261201T100000Z/traces/{names[0]}"]
    page = client.get("/api/eval", params={"key": "results/20261201T100000Z"}).json()
    first = f"results/20261201T100000Z/traces/{names[0]}"
    assert page["run_keys"] == [first, *[None] * (len(names) - 1)]
    run = client.get("/api/run", params={"key": page["run_keys"][0]}).json()
    assert run["evaluation"]["task_id"] == report["runs"][0]["task_id"]
    assert run["evaluation"]["heldout"] == {"passed": True, "judge": "out_of_process"}
    shutil.rmtree(results / "traces")
    assert client.get("/api/eval", params={"key": "results/20261201T100000Z"}).json()[
        "run_keys"
    ] == [None] * len(names)
