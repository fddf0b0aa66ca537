"""Live progress from trace events (issue 30): a line per turn, per retry, per candidate,
the final tests and the end; and, on a terminal, what the run waits for and how long."""

from __future__ import annotations

import io
import threading
from typing import Any

from sandbox_agent.trace.progress import ProgressLines
from sandbox_agent.trace.terminal import TerminalProgress

BUDGETS = {"max_iterations": 20, "max_wall_seconds": 300.0}
USAGE = {"input_tokens": 812, "output_tokens": 40, "cost_usd": 0.0}


def started() -> dict[str, Any]:
    return {"event": "run_started", "run_id": "r1", "source": "fixture paginator",
            "provider": "openai", "runner": "unittest", "runtime": "runc",
            "budgets": BUDGETS}  # fmt: skip


def turn(iteration: int, **extra: Any) -> dict[str, Any]:
    return {"event": "model_turn", "iteration": iteration, "duration_ms": 2100.0,
            "usage": USAGE, **extra}  # fmt: skip


def call(tool: str, arguments: dict[str, Any], summary: str, **extra: Any) -> dict[str, Any]:
    return {"event": "tool_call", "tool": tool, "arguments": arguments, "ok": True,
            "denial": None, "outcome": {"summary": summary}, "duration_ms": 350.0,
            **extra}  # fmt: skip


def all_lines(events: list[dict[str, Any]]) -> list[str]:
    progress = ProgressLines()
    return [line for event in events for line in progress.lines(event)]


def test_one_line_per_turn_with_tool_gist_outcome_seconds_and_tokens() -> None:
    patch = {"edits": [{"path": "paginator/core.py", "old": "a", "new": "b"}]}
    lines = all_lines([
        started(),
        turn(1),
        call("read_file", {"path": "paginator/core.py"}, "read 40 lines"),
        turn(2),
        call("apply_patch", patch, "applied 1 edit to 1 file"),
        turn(3),
        call("run_tests", {"selector": None}, "3 run, 0 failed (completed, attested=True)"),
        turn(4),
        {"event": "tool_call", "tool": "read_file", "ok": False, "denial": "path.outside_workspace",
         "message": "no", "budgets": {}},
        turn(5),
        {"event": "invalid_output", "denial": "output.not_json", "message": "not JSON"},
        turn(6),
        call("finish", {"summary": "fixed the offset"}, "finished"),
        {"event": "final_tests", "passed": True, "tests_run": 3, "failures": 0,
         "status": "completed", "reused": True},
        {"event": "run_finished", "status": "SUCCEEDED", "reason": "the final tests pass",
         "wall_seconds": 14.25},
    ])  # fmt: skip

    assert lines == [
        "run r1: fixture paginator, provider openai, unittest on runc; at most 20 turns, 300 s",
        "turn 1: read_file paginator/core.py -> read 40 lines "
        "(model 2.1 s, tool 0.3 s, 852 tokens)",
        "turn 2: apply_patch paginator/core.py (1 edit) -> applied 1 edit to 1 file "
        "(model 2.1 s, tool 0.3 s, 852 tokens)",
        "turn 3: run_tests all tests -> 3 run, 0 failed (completed, attested=True) "
        "(model 2.1 s, tool 0.3 s, 852 tokens)",
        "turn 4: read_file ? -> refused (path.outside_workspace) (model 2.1 s, 852 tokens)",
        "turn 5: invalid output (output.not_json: not JSON) (model 2.1 s, 852 tokens)",
        "turn 6: finish 'fixed the offset' -> finished (model 2.1 s, tool 0.3 s, 852 tokens)",
        "final tests: PASSED, 3 run, 0 failed (completed, the last run_tests reused)",
        "finished: SUCCEEDED (the final tests pass) in 14.2 s",
    ]


def test_retries_errors_cancels_and_a_reply_not_acted_on_are_said() -> None:
    failed = {"kind": "http_status", "http_status": 500, "type": "server_error", "message": "busy"}
    lines = all_lines([
        started(),
        {"event": "provider_retry", "attempt": 1, "retries": 4, "wait_seconds": 1.25,
         "provider_error": failed},
        {"event": "provider_error", "provider_error": {"kind": "connection",
         "message": "connection refused at 127.0.0.1:9 (is the server running? check --base-url)"}},
        turn(1),
        {"event": "request_stopped", "why": "cancelled", "message": "stopped"},
    ])  # fmt: skip

    assert lines[1:] == [
        "  model request failed: HTTP 500 server_error: busy; retry 1 of 4 in 1.2 s",
        "  model request failed: connection refused at 127.0.0.1:9 (is the server running? "
        "check --base-url)",
        "turn 1: the model's reply was not acted on (model 2.1 s, 852 tokens)",
        "  model request stopped: the run was cancelled",
    ]


def test_the_repair_strategy_shows_its_steps_replies_and_candidates() -> None:
    lines = all_lines([
        started(),
        call("run_tests", {}, "3 run, 1 failed (completed, attested=True)", by="controller"),
        turn(1, mode="text"),
        {"event": "candidate", "index": 1, "round": 0, "temperature": 0.0, "outcome": "failed",
         "reason": "1 of 3 tests fail", "tests_run": 3, "failures": 1},
        {"event": "candidate", "index": 2, "round": 0, "temperature": 0.8, "outcome": "refused",
         "reason": "the code is the same", "focus": "Cart.__init__\x1b[2K"},
    ])  # fmt: skip

    assert lines[1:] == [
        "  run_tests all tests: 3 run, 1 failed (completed, attested=True) (tool 0.3 s)",
        "  model reply 1 (model 2.1 s, 852 tokens)",
        "  candidate 1 (round 0, t=0): failed, 3 run, 1 failed: 1 of 3 tests fail",
        "  candidate 2 (round 0, t=0.8, for Cart.__init__?[2K): refused: the code is the same",
    ]


def test_hostile_text_cannot_drive_the_terminal() -> None:
    hostile = "evil\x1b]0;owned\x07\x1b[2J\u202e.py" + "x" * 500
    (line,) = all_lines([turn(1), call("read_file", {"path": hostile}, "ok\x1b[31m")])

    assert "\x1b" not in line
    assert "\x07" not in line
    assert "\u202e" not in line
    assert len(line) < 250


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_on_a_terminal_the_waiting_line_updates_in_place() -> None:
    screen, clock = FakeTerminal(), Clock()
    progress = TerminalProgress(screen, clock=clock, tick_seconds=0.01)
    progress.on_event(started())
    clock.now += 12
    _wait_for(lambda: "waiting for the model, 12 s" in screen.getvalue())
    progress.on_event(turn(1))
    progress.on_event(call("list_files", {"path": ""}, "5 files"))
    progress.close()

    text = screen.getvalue()
    assert "\n  … turn 1: waiting for the model, 12 s" in text
    assert "\r\x1b[2Kturn 1: list_files . -> 5 files" in text  # the waiting line replaced
    assert text.endswith("\r\x1b[2K") or text.endswith("\n")


def test_off_a_terminal_a_long_wait_is_one_plain_line() -> None:
    log, clock = io.StringIO(), Clock()
    progress = TerminalProgress(log, clock=clock, tick_seconds=0.01, quiet_seconds=30)
    progress.on_event(started())
    clock.now += 31
    _wait_for(lambda: "so far" in log.getvalue())
    progress.close()

    text = log.getvalue()
    assert "\x1b" not in text
    assert "\r" not in text
    assert text.count("  … turn 1: waiting for the model, 31 s so far\n") == 1


def test_a_broken_stream_never_stops_the_run() -> None:
    class Gone(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError

    progress = TerminalProgress(Gone())
    progress.on_event(started())  # no exception
    progress.on_event({"event": "model_turn", "iteration": "not a number", "usage": None})
    progress.close()


def _wait_for(condition: Any, seconds: float = 30) -> None:
    done = threading.Event()
    for _ in range(int(seconds / 0.01)):
        if condition():
            return
        done.wait(0.01)
    raise AssertionError("the condition never held")


def test_a_held_finish_says_the_tests_still_fail() -> None:
    from sandbox_agent.trace.progress import ProgressLines

    lines = ProgressLines().lines(
        {"event": "tool_call", "tool": "finish", "ok": True, "held": True, "arguments": {}}
    )
    assert any("held: the tests still fail" in line for line in lines)
