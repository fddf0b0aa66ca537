"""A restart keeps every finished run and marks the runs that were in flight INTERRUPTED."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
from fake_run import FakeRunFunction
from service_harness import TOKEN, LiveServer, wait_finished, wait_status

from sandbox_agent.service.settings import ServiceSettings

SUBMISSION = {"fixture": "paginator", "task": "fix it"}


def test_a_graceful_stop_interrupts_runs_in_flight_and_keeps_finished_ones(
    make_settings: Callable[..., ServiceSettings], start_server: Callable[..., LiveServer]
) -> None:
    settings = make_settings(max_concurrent=1)
    run_fn = FakeRunFunction(seconds=0.1)
    first = start_server(settings, run_fn)
    with first.client() as client:
        done = client.post("/runs", json=SUBMISSION).json()["id"]
        wait_finished(client, done)
        run_fn.seconds = 60
        running = client.post("/runs", json=SUBMISSION).json()["id"]
        queued = client.post("/runs", json=SUBMISSION).json()["id"]
        wait_status(client, running, "RUNNING")
    began = time.monotonic()
    first.stop()
    assert time.monotonic() - began < 5, "stopping cancels the running sandbox"

    reaped: list[bool] = []
    second = start_server(settings, FakeRunFunction(), reap_fn=lambda: reaped.append(True) or [])
    with second.client() as client:
        runs = {run_id: client.get(f"/runs/{run_id}").json() for run_id in (done, running, queued)}
    assert runs[done]["status"] == "SUCCEEDED"
    assert runs[done]["diff"]
    assert runs[running]["status"] == "INTERRUPTED"
    assert runs[queued]["status"] == "INTERRUPTED"
    assert "server stopped" in runs[running]["reason"]
    assert reaped == [], "a graceful stop leaves nothing in flight to reap"


def test_a_killed_server_leaves_runs_that_the_next_one_marks_interrupted_and_reaps(
    make_settings: Callable[..., ServiceSettings],
    start_server: Callable[..., LiveServer],
    tmp_path: Path,
) -> None:
    settings = make_settings()
    port_file = tmp_path / "port"
    script = Path(__file__).with_name("fake_server_main.py")
    args = [settings.db_path, settings.fixtures_dir, settings.work_dir, port_file, "60"]
    process = subprocess.Popen([sys.executable, str(script), *map(str, args)])
    try:
        deadline = time.monotonic() + 20
        while not port_file.exists() or not port_file.read_text():
            assert time.monotonic() < deadline, "the server process did not start"
            time.sleep(0.05)
        url = f"http://127.0.0.1:{port_file.read_text()}"
        headers = {"Authorization": f"Bearer {TOKEN}"}
        with httpx.Client(base_url=url, headers=headers, timeout=10) as client:
            while True:
                try:
                    client.get("/health")
                    break
                except httpx.TransportError:
                    assert time.monotonic() < deadline
                    time.sleep(0.05)
            ids = [client.post("/runs", json=SUBMISSION).json()["id"] for _ in range(3)]
            for run_id in ids[:2]:
                wait_status(client, run_id, "RUNNING")
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(10)

    reaped: list[bool] = []
    second = start_server(settings, FakeRunFunction(), reap_fn=lambda: reaped.append(True) or [])
    with second.client() as client:
        statuses = [client.get(f"/runs/{run_id}").json()["status"] for run_id in ids]
        assert statuses == ["INTERRUPTED"] * 3
        deadline = time.monotonic() + 5
        while not reaped:
            assert time.monotonic() < deadline, "the reaper was not called"
            time.sleep(0.02)
        # the new server takes new runs as usual
        fresh = client.post("/runs", json=SUBMISSION).json()["id"]
        assert wait_finished(client, fresh)["status"] == "SUCCEEDED"
