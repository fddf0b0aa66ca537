"""Helpers of the cluster tests: a real local cluster, the CLI against it, and what runs
where (processes by node session, sandbox containers by owner)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from sandbox_agent.cluster import local
from sandbox_agent.sandbox.docker.owner import LABEL_SANDBOX

CLI_TIMEOUT_S = 600.0


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = CLI_TIMEOUT_S) -> Any:
    """``sandbox-agent ARGS`` in a child process (Ray's driver stays out of pytest's)."""
    return subprocess.run(
        [sys.executable, "-m", "sandbox_agent", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        check=False,
    )


def start_cli(*args: str, log: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """``sandbox-agent ARGS`` in the background, output to ``log``; SIGINT at its default."""
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "sandbox_agent", *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **(env or {})},
            # The suite may run with SIGINT ignored (a background shell): the CLI under
            # test must get Ctrl-C's default, as from a terminal.
            preexec_fn=_default_sigint,  # noqa: PLW1509 - a signal reset only
        )


@contextlib.contextmanager
def cli_in_background(
    *args: str, log: Path, env: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """``start_cli``, and whatever happens in the block, the process ended and reaped after
    it (Ctrl-C first, so a driver still running cancels its runs, then SIGKILL)."""
    process = start_cli(*args, log=log, env=env)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=150)
            except subprocess.TimeoutExpired:
                process.kill()
        process.wait()


def _default_sigint() -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def report(results: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((results / "report.json").read_text(encoding="utf-8"))
    return data


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def running_runs(node: local.NodeProcess) -> list[int]:
    """Ray worker processes of ``node`` executing a run task now (their process title)."""
    return [pid for pid in local.session_pids(node.pid) if cmdline(pid).startswith("ray::run_")]


def sandboxes_owned_by(pids: Iterable[int]) -> list[str]:
    """Sandbox containers (any state) whose owner label names one of ``pids`` on this host."""
    import socket

    import docker

    wanted = {str(pid) for pid in pids}
    client = docker.from_env(version="1.41", timeout=30)
    try:
        found = client.api.containers(all=True, filters={"label": f"{LABEL_SANDBOX}=1"})
    finally:
        client.close()
    owned = []
    for entry in found:
        owner = (entry.get("Labels") or {}).get("sandbox-agent.owner", "")
        host, _, rest = owner.partition(":")
        if host == socket.gethostname() and rest.partition(":")[0] in wanted:
            owned.append(str(entry["Id"])[:12])
    return owned


def all_session_pids(cluster: local.LocalCluster) -> set[int]:
    return {pid for node in cluster.nodes for pid in local.session_pids(node.pid)}


def preflight_failures(cluster: local.LocalCluster) -> list[str]:
    """The "preflight ...: FAILED" lines the nodes printed before they joined."""
    return [
        line
        for node in cluster.nodes
        for line in node.log.read_text(encoding="utf-8", errors="replace").splitlines()
        if ": preflight " in line and "FAILED" in line
    ]
