"""The held-out judge and its candidate, run on the host by PID 1's own logic.

For tests that check many held-out modules quickly (the HumanEvalFix sample): the same
``sandbox_supervisor.judge`` and ``sandbox_supervisor.candidate`` as in the container,
forked by ``supervise`` with this process's uid (``keep_identity``) and a stand-in
attestation. The Docker tests (tests/evals/test_heldout_forgery.py) judge in the real
sandbox on both runtimes.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from sandbox_agent.sandbox.base import DEFAULT_JUDGE_CALL_TIMEOUT_S, JudgeRequest
from sandbox_agent.sandbox.docker.spec import judge_input
from sandbox_supervisor import protocol
from sandbox_supervisor.__main__ import supervise
from sandbox_supervisor.attest import Check
from sandbox_supervisor.identity import JUDGE_UID

SRC = Path(__file__).resolve().parents[2] / "src"
HOST_CONFIG = {
    "v": 1,
    "nonce": "0" * 32,
    "runtime": "runc",
    "cwd": "/",
    "kill_grace_s": 0.5,
    "output_budget": 1 << 20,
    "go_timeout_s": 30.0,
    "workload_uid": 10001,
    "workload_gid": 10001,
    "expect": {
        "uid": 0,
        "gid": 0,
        "capabilities": 0x1E0,
        "memory_bytes": 512 << 20,
        "pids": 128,
        "nofile": 256,
        "fsize_bytes": 64 << 20,
        "tmpfs_bytes": 64 << 20,
        "env": {},
        "workspace": "/workspace",
        "tmp": "/tmp",
        "canary": {"syscall": 146, "errno": 131},
        "deps": None,
    },
}


def _module_argv(module: str) -> list[str]:
    boot = (
        f"import runpy, sys; sys.path.insert(0, {str(SRC)!r}); "
        f"runpy.run_module({module!r}, run_name='__main__', alter_sys=True)"
    )
    return [sys.executable, "-I", "-B", "-c", boot]


def judge_on_host(
    tree: Path,
    module_source: str,
    *,
    deadline_s: float = 20.0,
    call_timeout_s: float = DEFAULT_JUDGE_CALL_TIMEOUT_S,
) -> dict[str, object]:
    """Judge ``module_source`` (a held-out module) against ``tree``; the exit report."""
    judge = JudgeRequest(
        module_name="test_heldout", source=module_source, call_timeout_s=call_timeout_s
    )
    config = {
        **HOST_CONFIG,
        "argv": _module_argv("sandbox_supervisor.judge"),
        "cwd": str(tree),
        "workload_env": {"PATH": "/usr/bin:/bin", "HOME": "/tmp"},
        "deadline_s": deadline_s,
        "judge": {
            "input": judge_input(judge),
            "candidate_argv": _module_argv("sandbox_supervisor.candidate"),
            "uid": JUDGE_UID,
            "gid": JUDGE_UID,
        },
    }
    go_read, go_write = os.pipe()
    os.write(go_write, protocol.GO)
    with tempfile.TemporaryFile() as out:
        try:
            supervise(
                json.dumps(config),
                out.fileno(),
                attester=lambda _: [Check("host_test", True, "judged on the host")],
                read_oom=lambda: None,
                go_fd=go_read,
                drop=lambda uid, gid: None,
            )
        finally:
            os.close(go_read)
            os.close(go_write)
        out.seek(0)
        frames = list(protocol.FrameDecoder().feed(out.read()))
    (report,) = [json.loads(p) for kind, p in frames if kind == protocol.KIND_EXIT]
    report["output"] = b"".join(p for kind, p in frames if kind != protocol.KIND_EXIT).decode(
        errors="replace"
    )
    return report


def passed(report: dict[str, object]) -> bool:
    """The held-out verdict's rule (``evals.running.heldout.verdict``) on a host exit report."""
    runner = report.get("runner_report")
    return bool(
        report.get("exit_code") == 0
        and isinstance(runner, dict)
        and runner["runner"] == "judge"
        and runner["tests_run"] > 0
        and runner["failures"] == runner["errors"] == 0
    )
