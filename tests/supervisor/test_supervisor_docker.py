"""PID 1 in the real runner image, with the hardened flags, on runc and on gVisor.

Output is read by attaching before start (binary safe; the json-file log driver is
not), with the log driver ``none``. The seccomp profile here is a stand-in that only
adds the canary rule: the product's pinned profile lives with the host side.
"""

from __future__ import annotations

import json
import secrets
import socket
from pathlib import Path
from typing import Any

import pytest
from supervisor_helpers import MiB, valid_config

from sandbox_supervisor import protocol
from sandbox_supervisor.attest import CHECK_NAMES

CANARY_SYSCALL = 146  # sched_get_priority_max: succeeds on both runtimes without the rule
CANARY_PROFILE = {
    "defaultAction": "SCMP_ACT_ALLOW",
    "syscalls": [
        {"names": ["sched_get_priority_max"], "action": "SCMP_ACT_ERRNO", "errnoRet": 131}
    ],
}
# gVisor applies the rule but ignores errnoRet: its ERRNO rules all fail with EPERM.
CANARY_ERRNO = {"runc": 131, "runsc": 1}
CONTAINER_ENV = {"PATH": "/usr/bin:/bin", "HOME": "/"}
TESTS = (
    "import unittest\n"
    "class T(unittest.TestCase):\n"
    "    def test_ok(self): print('hello from the workload')\n"
    "    def test_bad(self): self.fail('expected')\n"
)


def _run_container(runtime: str, workspace: Path, argv: list[str]) -> dict[str, Any]:
    import docker
    from docker.types import LogConfig, Ulimit
    from docker.utils.socket import STDOUT, frames_iter

    from sandbox_agent.hostsetup import image

    for path in [workspace, *workspace.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    config = valid_config(
        nonce=secrets.token_hex(16),
        runtime=runtime,
        argv=argv,
        workload_env={"PATH": "/usr/bin:/bin", "HOME": "/tmp"},
        deadline_s=20.0,
    )
    config["expect"]["env"] = {**CONTAINER_ENV, "HOSTNAME": "sandbox"}
    config["expect"]["canary"] = {"syscall": CANARY_SYSCALL, "errno": CANARY_ERRNO[runtime]}
    command = ["/usr/bin/python3", "-I", "-B", "-m", "sandbox_supervisor"]
    client = docker.from_env(version="1.41", timeout=60)
    container = client.containers.create(
        image.current_record().image_id,
        command,
        runtime=runtime,
        user="0:0",  # PID 1's; it drops every workload process to 10001
        cap_drop=["ALL"],
        cap_add=["KILL", "SETGID", "SETPCAP", "SETUID"],
        security_opt=["no-new-privileges", f"seccomp={json.dumps(CANARY_PROFILE)}"],
        network_mode="none",
        read_only=True,
        tmpfs={"/tmp": "rw,noexec,nosuid,nodev,size=64m"},
        mem_limit=512 * MiB,
        memswap_limit=512 * MiB,
        pids_limit=128,
        ulimits=[
            Ulimit(name="nofile", soft=256, hard=256),
            Ulimit(name="fsize", soft=64 * MiB, hard=64 * MiB),
        ],
        volumes={str(workspace): {"bind": "/workspace", "mode": "ro"}},
        environment=CONTAINER_ENV,
        hostname="sandbox",
        working_dir="/workspace",
        log_config=LogConfig(type="none"),
        stdin_open=True,  # the host's go arrives on PID 1's stdin
    )
    stdout, stderr = bytearray(), bytearray()
    try:
        params = {"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}
        sock = client.api.attach_socket(container.id, params=params)
        try:
            container.start()
            # The config, then the go at once: PID 1 reads the go only after its
            # attestation (the product's host first checks the record:
            # tests/sandbox/conformance).
            sock._sock.sendall(protocol.encode_config(protocol.canonical_json(config)))
            sock._sock.sendall(protocol.GO)
            sock._sock.shutdown(socket.SHUT_WR)
            for stream, data in frames_iter(sock, tty=False):
                (stdout if stream == STDOUT else stderr).extend(data)
        finally:
            sock._sock.close()  # the SDK leaves the attach connection open
            sock.close()
        status = container.wait(timeout=60)["StatusCode"]
    finally:
        container.remove(force=True)
        client.close()
    decoder = protocol.FrameDecoder()
    frames = list(decoder.feed(bytes(stdout)))
    assert decoder.pending == 0, stderr
    return {"status": status, "frames": frames, "stderr": bytes(stderr), "nonce": config["nonce"]}


def _records(result: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    kinds = [kind for kind, _ in result["frames"]]
    assert kinds[0] == protocol.KIND_ATTESTATION, result["stderr"]
    assert kinds.count(protocol.KIND_ATTESTATION) == 1
    assert kinds[-1] == protocol.KIND_EXIT, result["stderr"]
    assert kinds.count(protocol.KIND_EXIT) == 1
    attestation = json.loads(result["frames"][0][1])
    exit_report = json.loads(result["frames"][-1][1])
    assert attestation["nonce"] == exit_report["nonce"] == result["nonce"]
    return attestation, exit_report


RUNTIMES = [
    pytest.param("runc", marks=pytest.mark.docker),
    pytest.param("runsc", marks=[pytest.mark.docker, pytest.mark.runsc]),
]


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_attested_run_of_the_trusted_runner(runtime: str, tmp_path: Path) -> None:
    (tmp_path / "test_sample.py").write_text(TESTS)
    argv = ["/usr/bin/python3", "-I", "-B", "-m", "sandbox_supervisor.run_tests", "unittest"]
    result = _run_container(runtime, tmp_path, argv)
    attestation, exit_report = _records(result)
    failed = [check for check in attestation["checks"] if not check["ok"]]
    assert failed == []
    assert attestation["ok"] is True
    assert attestation["runtime"] == runtime
    assert [check["name"] for check in attestation["checks"]] == list(CHECK_NAMES)
    assert exit_report["exit_code"] == result["status"] == 1
    assert exit_report["runner_report"] == {
        "runner": "unittest",
        "tests_run": 2,
        "failures": 1,
        "errors": 0,
        "skipped": 0,
        "mode": "run",
        "ids": ["test_sample.T.test_bad", "test_sample.T.test_ok"],
        "broken": [],
        "skipped_ids": [],
    }
    stdout = b"".join(p for k, p in result["frames"] if k == protocol.KIND_STDOUT)
    assert stdout == b"hello from the workload\n"
    if runtime == "runc":
        assert exit_report["oom_kills_delta"] == 0
    else:
        assert exit_report["oom_kills_delta"] is None


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_flood_is_cut_at_the_budget(runtime: str, tmp_path: Path) -> None:
    code = "import sys\nwhile True: sys.stdout.write('x' * 10_000)\n"
    result = _run_container(runtime, tmp_path, ["/usr/bin/python3", "-I", "-c", code])
    _, exit_report = _records(result)
    data_kinds = (protocol.KIND_STDOUT, protocol.KIND_STDERR)
    relayed = sum(len(p) for k, p in result["frames"] if k in data_kinds)
    assert relayed == exit_report["output_bytes"] == MiB
    assert exit_report["output_truncated"] is True
    assert exit_report["exit_code"] == 137
    assert result["status"] == protocol.EXIT_WORKLOAD_OTHER  # PID 1 itself ended normally
    assert exit_report["duration_ms"] < 10_000
    assert not exit_report["timed_out"]


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_processes_that_left_the_group_die_with_the_workload(runtime: str, tmp_path: Path) -> None:
    # The parent ends only once the child has left its group: otherwise the group kill
    # alone could catch a child not yet scheduled, and the test passed proving nothing.
    code = (
        "import os, time\n"
        "left, tell = os.pipe()\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    os.write(tell, b'1')\n"
        "    time.sleep(0.4)\n"  # within PID 1's drain window, had it survived
        "    os.write(1, b'escaped')\n"
        "    os._exit(0)\n"
        "os.read(left, 1)\n"
        "print('main')\n"
    )
    result = _run_container(runtime, tmp_path, ["/usr/bin/python3", "-I", "-c", code])
    _, exit_report = _records(result)
    stdout = b"".join(p for k, p in result["frames"] if k == protocol.KIND_STDOUT)
    assert stdout == b"main\n"
    assert exit_report["exit_code"] == result["status"] == 0
