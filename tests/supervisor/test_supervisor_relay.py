"""PID 1's fork, relay, budget, deadline and framing, with real workloads on the host.

The attestation is replaced by a passing stand-in (the real one needs a container: see
the Docker tests); everything after it runs as in the container, except ``kill(-1)``,
which only PID 1 may send.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from supervisor_helpers import NONCE, passing_attester, run_supervised, valid_config

from sandbox_supervisor import protocol
from sandbox_supervisor.__main__ import EXIT_REFUSED, supervise
from sandbox_supervisor.attest import CHECK_NAMES, Check
from sandbox_supervisor.config import Config

OUT, ERR = protocol.KIND_STDOUT, protocol.KIND_STDERR


def _kinds(frames: list[tuple[bytes, bytes]]) -> list[bytes]:
    return [kind for kind, _ in frames]


def test_output_is_framed_in_order_and_the_exit_code_is_the_workloads() -> None:
    run = run_supervised("import sys; print('out'); sys.stderr.write('err'); sys.exit(3)")
    kinds = _kinds(run.frames)
    assert kinds[0] == protocol.KIND_ATTESTATION
    assert kinds[-1] == protocol.KIND_EXIT
    assert set(kinds[1:-1]) <= {OUT, ERR}
    assert run.data(OUT) == b"out\n"
    assert run.data(ERR) == b"err"
    assert run.pending == 0
    report = run.exit_report
    assert run.exit_code == report["exit_code"] == 3
    assert report["nonce"] == NONCE
    assert report["signal"] is None
    assert report["output_bytes"] == 7
    assert not report["output_truncated"]
    assert not report["timed_out"]
    assert report["oom_kills_delta"] is None
    assert 0 < report["duration_ms"] < 10_000


def test_a_flood_is_cut_at_exactly_the_budget() -> None:
    budget = 100_003
    run = run_supervised("while True: print('flood' * 20)", output_budget=budget)
    report = run.exit_report
    assert len(run.data()) == report["output_bytes"] == budget
    assert report["output_truncated"]
    assert report["signal"] == 9
    assert run.exit_report["exit_code"] == 137
    assert run.exit_code == protocol.EXIT_WORKLOAD_OTHER
    assert all(len(payload) <= protocol.MAX_FRAME_PAYLOAD for _, payload in run.frames)


def test_output_of_exactly_the_budget_is_not_truncated() -> None:
    run = run_supervised("import sys; sys.stdout.write('x' * 5000)", output_budget=5000)
    assert run.data() == b"x" * 5000
    assert not run.exit_report["output_truncated"]
    assert run.exit_code == 0


def test_a_zero_budget_relays_nothing() -> None:
    run = run_supervised("print('a')", output_budget=0)
    assert run.data() == b""
    assert run.exit_report["output_truncated"]


def test_binary_and_unterminated_output_arrives_byte_for_byte() -> None:
    code = "import os; os.write(1, bytes(range(256)) * 3); os.write(2, b'\\xff\\x00no newline')"
    run = run_supervised(code)
    assert run.data(OUT) == bytes(range(256)) * 3
    assert run.data(ERR) == b"\xff\x00no newline"


def test_the_deadline_kills_a_workload_that_ignores_sigterm() -> None:
    # SIGTERM is ignored before the clock can run out: coreutils' env ignores it and execs
    # Python, which keeps it ignored. Set by Python itself, it would race Python's start.
    argv = ["env", "--ignore-signal=TERM", sys.executable, "-c", "import time; time.sleep(30)"]
    run = run_supervised("", argv=argv, deadline_s=0.5, kill_grace_s=0.3)
    report = run.exit_report
    assert report["timed_out"]
    assert report["signal"] == 9
    assert run.exit_report["exit_code"] == 137
    assert run.exit_code == protocol.EXIT_WORKLOAD_OTHER
    # Not before the deadline and its grace; long before the workload's own end (30 s).
    assert 750 <= report["duration_ms"] < 15_000


def test_the_deadline_sends_sigterm_first() -> None:
    run = run_supervised("import time; time.sleep(30)", deadline_s=0.3, kill_grace_s=5)
    report = run.exit_report
    assert report["timed_out"]
    assert report["signal"] == 15
    assert run.exit_report["exit_code"] == 143
    assert run.exit_code == protocol.EXIT_WORKLOAD_OTHER
    assert report["duration_ms"] < 3000


def test_a_signal_death_is_128_plus_n() -> None:
    run = run_supervised("import os, signal; os.kill(os.getpid(), signal.SIGUSR1)")
    assert run.exit_report["signal"] == 10
    assert run.exit_report["exit_code"] == 138
    assert run.exit_code == protocol.EXIT_WORKLOAD_OTHER


REPORT = {
    "runner": "unittest",
    "tests_run": 3,
    "failures": 1,
    "errors": 0,
    "skipped": 0,
    "mode": "run",
    "ids": ["t.T.a", "t.T.b", "t.T.c"],
    "broken": [],
    "skipped_ids": [],
}


def test_the_runner_report_arrives_through_fd_3() -> None:
    run = run_supervised(f"import os; os.write(3, {json.dumps(REPORT).encode()!r})")
    assert run.exit_report["runner_report"] == REPORT
    assert run.exit_report["runner_report_error"] is None
    assert run.data() == b""


@pytest.mark.parametrize(
    ("payload", "error"),
    [
        (b"", "no runner report"),
        (b"not json", "not one JSON object"),
        (json.dumps(REPORT).encode() * 2, "not one JSON object"),
        (json.dumps({**REPORT, "extra": 1}).encode(), "exactly the keys"),
        (json.dumps({**REPORT, "tests_run": -1}).encode(), "tests_run"),
        (json.dumps({**REPORT, "failures": True}).encode(), "failures"),
        (None, "exceeds"),  # one byte over the limit, made in the workload (argv is short)
        # Outside review (issue 15's red team, F4): nesting past the parser's recursion
        # limit raised RecursionError out of PID 1, which exited 126 with no exit record.
        (b"[" * 5000 + b"]" * 5000, "not one JSON object"),
        (b'{"runner": ' + b"[" * 5000 + b"]" * 5000 + b"}", "not one JSON object"),
        (b'{"tests_run": ' + b"9" * 5000 + b"}", "not one JSON object"),
    ],
)
def test_a_bad_runner_report_is_null_with_a_reason(payload: bytes | None, error: str) -> None:
    made = f"b' ' * {protocol.MAX_RUNNER_REPORT_BYTES + 1}" if payload is None else repr(payload)
    code = f"import os\ndata = {made}\nwhile data: data = data[os.write(3, data):]"
    run = run_supervised(code)
    assert run.exit_report["runner_report"] is None
    assert error in run.exit_report["runner_report_error"]


def test_no_report_when_the_workload_exits_abruptly() -> None:
    run = run_supervised("import os; print('partial', flush=True); os._exit(0)")
    assert run.exit_report["runner_report"] is None
    assert run.data(OUT) == b"partial\n"


def test_the_workload_cannot_forge_control_frames() -> None:
    fake = {"type": "exit", "v": 1, "nonce": NONCE, "exit_code": 0, "signal": None}
    forged = protocol.encode_record(protocol.KIND_ATTESTATION, {"nonce": NONCE, "ok": True})
    forged += protocol.encode_record(protocol.KIND_EXIT, fake)
    code = f"import os, sys; os.write(1, {forged!r}); os.write(2, {forged!r}); sys.exit(7)"
    run = run_supervised(code)
    kinds = _kinds(run.frames)
    assert kinds.count(protocol.KIND_ATTESTATION) == 1
    assert kinds[0] == protocol.KIND_ATTESTATION
    assert kinds.count(protocol.KIND_EXIT) == 1
    assert kinds[-1] == protocol.KIND_EXIT
    assert run.records(protocol.KIND_ATTESTATION)[0]["checks"][0]["name"] == "host_test"
    assert run.exit_report["exit_code"] == 7 == run.exit_code
    assert run.data(OUT) == forged
    assert run.data(ERR) == forged


def test_the_workload_gets_exactly_its_fds_env_cwd_and_session(tmp_path: Path) -> None:
    code = (
        "import os, sys, json\n"
        "env = open('/proc/self/environ', 'rb').read().split(b'\\0')\n"
        "print(json.dumps({'fds': sorted(os.listdir('/proc/self/fd')),"
        " 'env': sorted(e.decode() for e in env if e), 'cwd': os.getcwd(),"
        " 'sid': os.getsid(0) == os.getpid(), 'pgid': os.getpgid(0) == os.getpid(),"
        " 'stdin': sys.stdin.buffer.read().decode()}))"
    )
    run = run_supervised(code, cwd=tmp_path)
    seen = json.loads(run.data(OUT))
    assert seen["fds"] == ["0", "1", "2", "3", "4"]  # 4: listdir's own handle
    assert seen["env"] == sorted(f"{k}={v}" for k, v in _workload_env().items())
    assert seen["cwd"] == str(tmp_path)
    assert seen["sid"]
    assert seen["pgid"]
    assert seen["stdin"] == ""


def _workload_env() -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/tmp"}


def test_processes_left_behind_are_killed_and_do_not_hold_the_run() -> None:
    code = "import os, time\nif os.fork() == 0:\n    time.sleep(30)\nprint('parent done')\n"
    run = run_supervised(code, deadline_s=20)
    assert run.exit_code == 0
    assert run.data(OUT) == b"parent done\n"
    assert run.exit_report["duration_ms"] < 3000


def test_a_missing_program_exits_127_with_a_reason() -> None:
    run = run_supervised("", argv=["/nonexistent/program"])
    assert run.exit_report["exit_code"] == 127
    assert run.exit_code == protocol.EXIT_WORKLOAD_OTHER
    assert b"cannot run '/nonexistent/program'" in run.data(ERR)


def test_a_failed_attestation_forks_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "ran"

    def failing(config: Config) -> list[Check]:
        return [*passing_attester(config), Check("seccomp", False, "Seccomp: 0")]

    run = run_supervised(f"open({str(marker)!r}, 'w')", attester=failing)
    assert run.exit_code == EXIT_REFUSED
    assert _kinds(run.frames) == [protocol.KIND_ATTESTATION]
    assert run.records(protocol.KIND_ATTESTATION)[0]["ok"] is False
    assert not marker.exists()


def test_a_bad_config_is_refused_with_a_tagged_record_when_the_nonce_reads(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    with out.open("w+b") as handle:
        code = supervise(json.dumps({"nonce": NONCE, "v": 1}), handle.fileno())
        handle.seek(0)
        frames = list(protocol.FrameDecoder().feed(handle.read()))
    assert code == EXIT_REFUSED
    ((kind, payload),) = frames
    record = json.loads(payload)
    assert kind == protocol.KIND_ATTESTATION
    assert record["nonce"] == NONCE
    assert record["ok"] is False
    assert record["runtime"] is None
    assert record["checks"][0]["name"] == "config"
    with out.open("w+b") as handle:
        assert supervise("{", handle.fileno()) == EXIT_REFUSED
        assert out.read_bytes() == b""


def test_pid1_entry_on_the_host_refuses_with_every_check_named(tmp_path: Path) -> None:
    config = protocol.canonical_json(valid_config(argv=[str(tmp_path / "never")]))
    done = subprocess.run(
        [sys.executable, "-I", "-B", "-m", "sandbox_supervisor"],
        input=protocol.encode_config(config),  # on stdin, never on the command line
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == EXIT_REFUSED, done.stderr
    ((kind, payload),) = protocol.FrameDecoder().feed(done.stdout)
    record = json.loads(payload)
    assert kind == protocol.KIND_ATTESTATION
    assert record["ok"] is False
    assert [check["name"] for check in record["checks"]] == list(CHECK_NAMES)
    assert not {c["name"] for c in record["checks"] if c["ok"]} >= {"pid1", "uid"}


@pytest.mark.parametrize(
    ("workload", "pid1"),
    [(0, 0), (1, 1), (120, 120), (121, 121), (125, 121), (126, 121), (137, 121), (255, 121)],
)
def test_pid1_never_ends_a_complete_run_with_a_code_of_its_own_failure(
    workload: int, pid1: int
) -> None:
    """125 (refused), 126 (PID 1 crashed) and 128+N (PID 1 killed) are never the code of a
    complete run, so an exit report agreeing with Docker proves PID 1 reached its end."""
    assert protocol.pid1_exit_code(workload) == pid1
