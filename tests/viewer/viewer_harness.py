"""The viewer's test harness: a ``view`` server on loopback, folders of runs made by the
real controller (Docker) or written by hand (hostile shapes), and screenshots kept as
artifacts (``artifacts/viewer/``; ``make viewer-screenshots`` copies them to the docs)."""

from __future__ import annotations

import json
import shutil
import socket
import threading
import time
from pathlib import Path
from typing import Any

import uvicorn

from sandbox_agent.controller.models import (
    BudgetUsed,
    FinalTests,
    FixtureIntegrity,
    RunResult,
    ToolCallRecord,
)
from sandbox_agent.settings import PROJECT_ROOT
from sandbox_agent.viewer.app import create_view_app
from sandbox_agent.viewer.settings import ViewSettings

DATA = Path(__file__).parent / "data"
REAL_MODEL_RUN = DATA / "real-model-run"
"""A run of the local model (Qwen2.5-Coder-1.5B, ``--provider local``) recorded here."""
REAL_MODEL_KEY = DATA / "real-model-run.signing-key.pub"
"""The public key of the host that sealed it."""
SCREENSHOTS = PROJECT_ROOT / "artifacts" / "viewer"
SHA = "ab" * 32


class ViewServer:
    """``create_view_app`` under uvicorn in a thread, on a free loopback port."""

    def __init__(self, settings: ViewSettings) -> None:
        self.app = create_view_app(settings)
        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self.port = self._socket.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(self.app, log_level="warning", lifespan="on")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True
        )

    def __enter__(self) -> ViewServer:
        self._thread.start()
        deadline = time.monotonic() + 20
        while not self._server.started:
            assert time.monotonic() < deadline, "the viewer did not start"
            time.sleep(0.02)
        return self

    def __exit__(self, *_: object) -> None:
        self._server.should_exit = True
        self._thread.join(30)
        self._socket.close()


def copy_real_model_run(root: Path, name: str = "real-model-run") -> Path:
    target = root / name
    shutil.copytree(REAL_MODEL_RUN, target)
    return target


def result_dict(**overrides: Any) -> dict[str, Any]:
    """A valid ``result.json`` (a ``RunResult``), changed by ``overrides``."""
    result = RunResult(
        run_id="hand-made",
        status="FAILED",
        reason="the final tests fail",
        diff="",
        files_changed=[],
        final_tests=FinalTests(passed=False, tests_run=2, failures=1, status="completed"),
        budget_used=BudgetUsed(iterations=2, tool_calls=1, policy_denials=1),
        fixture=FixtureIntegrity(intact=True, sha256_before=SHA, sha256_after=SHA),
        trace_path="/etc/passwd",
        tool_calls=[
            ToolCallRecord(tool="read_file", ok=False, denial="path.absolute", duration_ms=0.1)
        ],
        provider="scripted",
    )
    return {**json.loads(result.model_dump_json()), **overrides}


def write_run(
    folder: Path, events: list[dict[str, Any] | str], result: dict[str, Any] | None
) -> Path:
    """A run folder written by hand: events (a string is written as a raw line), a result."""
    folder.mkdir(parents=True)
    lines = [event if isinstance(event, str) else json.dumps(event) for event in events]
    (folder / "trace.jsonl").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    if result is not None:
        (folder / "result.json").write_text(json.dumps(result), encoding="utf-8")
    return folder


def screenshot(page: Any, name: str, *, full_page: bool = False) -> Path:
    """Keep what the page shows now as ``artifacts/viewer/<name>.png``."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path
