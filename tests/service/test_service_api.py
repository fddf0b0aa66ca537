"""The API through a real server on loopback: runs, results, trace, diff, events, cancel."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable

import httpx
from fake_run import FAKE_DIFF, FakeRunFunction
from service_harness import HeldAfterFirstCall, LiveServer, wait_finished, wait_status

from sandbox_agent.service.settings import ServiceSettings

SUBMISSION = {"fixture": "paginator", "task": "fix the page count"}


def test_health_needs_no_token_and_the_page_shell_loads(server: LiveServer) -> None:
    with server.client(token=None) as client:
        assert client.get("/health").json() == {"status": "ok"}
        page = client.get("/")
        assert page.status_code == 200
        assert "text/html" in page.headers["content-type"]
        assert "script-src 'self'" in page.headers["content-security-policy"]
        assert client.get("/static/app.js").status_code == 200


def test_a_run_goes_from_queued_to_its_result(
    make_settings: Callable[..., ServiceSettings], start_server: Callable[..., LiveServer]
) -> None:
    # The run waits for the test's look at it: a 0.2 s run could end before the GET did.
    looked = threading.Event()

    class Gated(FakeRunFunction):
        def __call__(self, config, **kwargs):  # type: ignore[no-untyped-def]
            looked.wait(10)
            return super().__call__(config, **kwargs)

    server = start_server(make_settings(), Gated(seconds=0.2))
    with server.client() as client:
        answer = client.post("/runs", json=SUBMISSION)
        assert answer.status_code == 202
        run_id = answer.json()["id"]
        assert answer.headers["location"] == f"/runs/{run_id}"
        assert client.get(f"/runs/{run_id}").json()["status"] in {"QUEUED", "RUNNING"}
        looked.set()
        run = wait_finished(client, run_id)
        assert run["status"] == "SUCCEEDED"
        assert run["diff"] == FAKE_DIFF
        assert run["fixture"]["intact"] is True
        assert run["fixture_name"] == "paginator"
        assert any(call["denial"] == "path.protected" for call in run["tool_calls"])
        assert run["duration_s"] > 0
        assert client.get(f"/runs/{run_id}/diff").text == FAKE_DIFF
        trace = [json.loads(line) for line in client.get(f"/runs/{run_id}/trace").text.splitlines()]
        assert trace[0]["event"] == "run_started"
        assert trace[-1] == {"event": "run_finished", "status": "SUCCEEDED"}
        listed = client.get("/runs").json()
        assert [run["id"] for run in listed["runs"]] == [run_id]
        assert listed["runs"][0]["budget_used"]["policy_denials"] == 1


def test_the_run_function_gets_the_fixture_by_name_and_an_inline_plan(
    make_settings: Callable[..., ServiceSettings], start_server: Callable[..., LiveServer]
) -> None:
    settings = make_settings()
    seen: list[str] = []

    class PlanReader(FakeRunFunction):
        def __call__(self, config, **kwargs):  # type: ignore[no-untyped-def]
            assert config.fixture == "textstats"
            assert config.fixtures_dir == settings.fixtures_dir
            assert config.run_id
            assert config.trace_dir == settings.trace_dir
            with open(config.provider_options.plan_path, encoding="utf-8") as plan:
                seen.append(plan.read())
            return super().__call__(config, **kwargs)

    server = start_server(settings, PlanReader())
    plan = {"steps": [{"tool": "finish", "args": {"summary": "done"}}, {"raw": "not json"}]}
    with server.client() as client:
        run_id = client.post("/runs", json={**SUBMISSION, "fixture": "textstats", "plan": plan})
        run = wait_finished(client, run_id.json()["id"])
    assert run["status"] == "SUCCEEDED"
    assert json.loads(seen[0]) == plan
    assert not list(settings.plans_dir.iterdir()), "the plan file is removed after the run"


def test_server_sent_events_replay_then_follow_live_then_end(
    make_settings: Callable[..., ServiceSettings], start_server: Callable[..., LiveServer]
) -> None:
    # "Live" is shown by cause, not by timing: the run holds after its first tool call
    # until the test has read that call from the stream. A stream that sent only at the
    # end would leave the run held (and ``released`` false).
    seen_first_call = threading.Event()
    held = HeldAfterFirstCall(seen_first_call, seconds=0.5)
    server = start_server(make_settings(), held)
    with server.client() as client:
        run_id = client.post("/runs", json=SUBMISSION).json()["id"]
        received: list[tuple[str, str]] = []
        with client.stream("GET", f"/runs/{run_id}/events") as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            name = ""
            for line in stream.iter_lines():
                if line.startswith("event: "):
                    name = line[7:]
                elif line.startswith("data: "):
                    received.append((name, line[6:]))
                    if json.loads(line[6:]).get("event") == "tool_call":
                        seen_first_call.set()
        finished = client.get(f"/runs/{run_id}").json()
        assert finished["status"] == "SUCCEEDED"
        assert held.released == [True], "the first tool call reached the stream while it ran"
        names = [name for name, _ in received]
        assert names == ["trace"] * 7 + ["end"]
        assert json.loads(received[-1][1])["status"] == "SUCCEEDED"
        # a second stream of a finished run replays everything, and resumes after an id
        replay = client.get(f"/runs/{run_id}/events").text
        assert replay.count("event: trace") == 7
        resumed = client.get(f"/runs/{run_id}/events", headers={"Last-Event-ID": "5"}).text
        assert resumed.count("event: trace") == 2
        assert resumed.startswith("id: 6\n")


def test_cancel_stops_a_running_run_and_drops_a_queued_one(
    make_settings: Callable[..., ServiceSettings], start_server: Callable[..., LiveServer]
) -> None:
    server = start_server(make_settings(max_concurrent=1), FakeRunFunction(seconds=30))
    with server.client() as client:
        running = client.post("/runs", json=SUBMISSION).json()["id"]
        queued = client.post("/runs", json=SUBMISSION).json()["id"]
        wait_status(client, running, "RUNNING")
        answer = client.post(f"/runs/{queued}/cancel")
        assert answer.status_code == 202
        assert answer.json() == {"id": queued, "status": "CANCELLED"}
        began = time.monotonic()
        assert client.post(f"/runs/{running}/cancel").json()["status"] == "RUNNING"
        run = wait_finished(client, running, timeout=20)
        # Stopped by the cancel, not by the run's own end (30 s). How fast a cancel lands
        # is a benchmark's question; on a loaded machine it is not a second.
        assert time.monotonic() - began < 20
        assert run["status"] == "CANCELLED"
        assert run["reason"] == "cancelled by the user"
        assert client.get(f"/runs/{queued}").json()["reason"] == "cancelled before it started"
        # cancelling a finished run changes nothing
        assert client.post(f"/runs/{running}/cancel").json()["status"] == "CANCELLED"
        assert client.post(f"/runs/{'0' * 32}/cancel").status_code == 404


def test_eight_concurrent_submissions_hold_the_limit_and_lose_nothing(
    make_settings: Callable[..., ServiceSettings], start_server: Callable[..., LiveServer]
) -> None:
    run_fn = FakeRunFunction(seconds=0.3)
    server = start_server(make_settings(max_concurrent=3), run_fn)
    ids: list[str] = []
    lock = threading.Lock()
    barrier = threading.Barrier(12)

    def submit(index: int) -> None:
        with server.client() as client:
            barrier.wait()
            answer = client.post("/runs", json={**SUBMISSION, "task": f"task {index}"})
            assert answer.status_code == 202, answer.text
            with lock:
                ids.append(answer.json()["id"])

    threads = [threading.Thread(target=submit, args=(index,)) for index in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(ids) == 12
    assert len(set(ids)) == 12
    with server.client() as client:
        runs = [wait_finished(client, run_id) for run_id in ids]
        listed = client.get("/runs").json()
    assert {run["status"] for run in runs} == {"SUCCEEDED"}
    assert sorted(run["id"] for run in listed["runs"]) == sorted(ids)
    assert listed["total"] == 12
    assert sorted(call.task for call in run_fn.calls) == sorted(f"task {i}" for i in range(12))
    assert run_fn.max_active == 3


def test_a_full_queue_answers_429_with_retry_after(
    make_settings: Callable[..., ServiceSettings], start_server: Callable[..., LiveServer]
) -> None:
    server = start_server(make_settings(max_concurrent=1, max_queue=2), FakeRunFunction(30))
    with server.client() as client:
        first = client.post("/runs", json=SUBMISSION).json()["id"]
        wait_status(client, first, "RUNNING")
        assert client.post("/runs", json=SUBMISSION).status_code == 202
        assert client.post("/runs", json=SUBMISSION).status_code == 202
        full = client.post("/runs", json=SUBMISSION)
        assert full.status_code == 429
        assert int(full.headers["retry-after"]) >= 1
        assert client.get("/runs").json()["total"] == 3


def test_submissions_are_rate_limited_per_client(
    make_settings: Callable[..., ServiceSettings], start_server: Callable[..., LiveServer]
) -> None:
    # A token comes back every 100 s: slow enough that no pause of a loaded machine
    # refills one between the posts (at 0.5/s, a 2 s pause would).
    settings = make_settings(rate_burst=3, rate_per_second=0.01, max_concurrent=1)
    server = start_server(settings, FakeRunFunction())
    with server.client() as client:
        codes = [client.post("/runs", json=SUBMISSION).status_code for _ in range(4)]
        assert codes == [202, 202, 202, 429]
        limited = client.post("/runs", json=SUBMISSION)
        assert limited.status_code == 429
        # the wait for the next token: 100 s less what has passed since the first post
        assert 50 <= int(limited.headers["retry-after"]) <= 100
        assert client.get("/runs").status_code == 200, "reads are not rate limited"


def test_unknown_runs_and_bad_ids(server: LiveServer) -> None:
    with server.client() as client:
        assert client.get(f"/runs/{'a' * 32}").status_code == 404
        assert client.get("/runs/not-an-id").status_code == 422
        assert client.get(f"/runs/{'a' * 32}/events").status_code == 404


def test_fixtures_and_preflight(server: LiveServer) -> None:
    with server.client() as client:
        listed = client.get("/fixtures").json()
        assert listed["fixtures"] == ["paginator", "textstats"]
        assert "scripted" in listed["providers"]
        assert client.get("/preflight").json()["status"] == "unknown"


def test_openapi_is_published_and_every_request_body_forbids_extra_fields(
    server: LiveServer,
) -> None:
    schema = httpx.get(f"{server.url}/openapi.json").json()
    assert {"/runs", "/runs/{run_id}", "/runs/{run_id}/events", "/health"} <= set(schema["paths"])
    components = schema["components"]["schemas"]
    for name in ("SubmitRequest", "Plan", "ToolStep", "RawStep"):
        assert components[name]["additionalProperties"] is False, name
    assert "HTTPBearer" in schema["components"]["securitySchemes"]
