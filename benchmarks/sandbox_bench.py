"""Sandbox cost, side by side: bare host, raw Docker, and the verified, attested run.

For a tiny 3-test unittest suite, on each runtime: the median of each phase of the
verified run (create, verify, start, attest, run, remove), against (a) the same
``python3 -m unittest`` run bare on the host and (b) a raw, unverified Docker
create+start+wait+rm of the same command, same image, same limits.

Two workloads: ``python3 -m unittest -q`` (any argv: PID 1 forks and execs it) and the
trusted runner wrapper that every ``run_tests`` call runs (PID 1 runs it in its forked
interpreter, ``launch`` = ``fork``). Each is compared with a raw Docker run of exactly
the same command.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

RUNS = 7
SUITE = """
import unittest

class Tiny(unittest.TestCase):
    def test_one(self): self.assertEqual(1, 1)
    def test_two(self): self.assertTrue(True)
    def test_three(self): self.assertIn(1, [1])
"""
ARGV = ("python3", "-m", "unittest", "-q")
RUNNER = ("/usr/bin/python3", "-I", "-B", "-m", "sandbox_supervisor.run_tests", "unittest")
WORKLOADS = {"python3 -m unittest (exec)": ARGV, "trusted runner (fork)": RUNNER}
BARE_ARGV = ("/usr/bin/python3", "-m", "unittest", "-q")
"""The host's own Debian python3, not a version-manager shim whose start-up is a shell script."""
PHASES = ("create", "verify", "start", "attest", "run", "remove")


def _bare(workspace: Path) -> float:
    started = time.monotonic()
    subprocess.run(BARE_ARGV, cwd=workspace, capture_output=True, check=True)
    return (time.monotonic() - started) * 1000


def _raw_docker(
    api: Any, image_id: str, workspace: Path, runtime: str, argv: tuple[str, ...]
) -> float:
    from sandbox_agent.sandbox.base import SandboxLimits

    limits = SandboxLimits()
    host = {
        "Runtime": runtime,
        "NetworkMode": "none",
        "ReadonlyRootfs": True,
        "Binds": [f"{workspace}:/workspace:ro"],
        "Tmpfs": {"/tmp": f"rw,noexec,nosuid,nodev,size={limits.tmpfs_bytes}"},  # noqa: S108
        "Memory": limits.memory_bytes,
        "MemorySwap": limits.memory_bytes,
        "NanoCpus": int(limits.cpus * 1e9),
        "PidsLimit": limits.pids,
        "CapDrop": ["ALL"],
        "LogConfig": {"Type": "none", "Config": {}},
    }
    body = {"Image": image_id, "Cmd": list(argv), "User": "10001:10001", "HostConfig": host}
    body["WorkingDir"] = "/workspace"
    started = time.monotonic()
    container = api.create_container_from_config(body)["Id"]
    api.start(container)
    api.wait(container)
    api.remove_container(container, force=True)
    return (time.monotonic() - started) * 1000


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 1)


def main(argv: list[str]) -> int:
    """Run the benchmark and print a table of medians and ratios."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks")
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--runtime", action="append", choices=("runc", "runsc"))
    args = parser.parse_args(argv)
    from sandbox_agent.hostsetup.image import ensure
    from sandbox_agent.sandbox.docker.docker_backend import DockerBackend

    backend = DockerBackend(image_id=ensure().image_id)
    workspace = Path(tempfile.mkdtemp(prefix="sandbox-bench-"))
    workspace.chmod(0o755)
    (workspace / "test_tiny.py").write_text(textwrap.dedent(SUITE))
    (workspace / "test_tiny.py").chmod(0o644)
    bare = _median([_bare(workspace) for _ in range(args.runs)])
    print(f"bare host python3 -m unittest: {bare} ms (median of {args.runs})")
    for runtime in args.runtime or ["runc", "runsc"]:
        for label, command in WORKLOADS.items():
            code = _compare(backend, workspace, runtime, label, command, runs=args.runs)
            if code:
                return code
        code = _prestart_compare(workspace, runtime, args.runs)
        if code:
            return code
    backend.close()
    return 0


def _compare(
    backend: Any, workspace: Path, runtime: str, label: str, argv: tuple[str, ...], *, runs: int
) -> int:
    """One workload on one runtime: raw Docker and verified runs, interleaved."""
    from sandbox_agent.sandbox.base import SandboxRequest

    raw: list[float] = []
    total: list[float] = []
    phases: dict[str, list[float]] = {name: [] for name in PHASES}
    request = SandboxRequest(argv=argv, workspace=workspace, runtime=runtime)  # type: ignore[arg-type]
    backend.run(request)  # warm-up
    _raw_docker(backend.api, backend.image_id, workspace, runtime, argv)
    for _ in range(runs):  # interleaved, so drift hits both sides alike
        raw.append(_raw_docker(backend.api, backend.image_id, workspace, runtime, argv))
        started = time.monotonic()
        result = backend.run(request)
        total.append((time.monotonic() - started) * 1000)
        if result.status != "completed":
            print(f"{runtime}: run not completed: {result.reason}", file=sys.stderr)
            return 1
        for name in PHASES:
            phases[name].append(result.phase_ms.get(name, 0.0))
    raw_m, total_m = _median(raw), _median(total)
    print(f"\n{runtime}, {label}: raw docker {raw_m} ms, verified {total_m} ms")
    print("  phases (median ms): " + ", ".join(f"{n} {_median(phases[n])}" for n in PHASES))
    print(f"  verified / raw docker: {total_m / raw_m:.2f}x (target <= 1.15x)")
    return 0


THINK_S = 1.0
"""Stand-in for the model's turn between an edit and its test run (real ones: seconds)."""


def _prestart_compare(workspace: Path, runtime: str, runs: int) -> int:
    """What ``run_tests`` costs the caller: cold, and pre-started during a model turn."""
    from sandbox_agent.sandbox.base import SandboxRequest
    from sandbox_agent.sandbox.docker.docker_backend import DockerBackend

    backend = DockerBackend(prestarted=1, reap_on_first_use=False)
    request = SandboxRequest(argv=RUNNER, workspace=workspace, runtime=runtime)  # type: ignore[arg-type]
    cold: list[float] = []
    warm: list[float] = []
    try:
        backend.run(request)  # warm-up
        for _ in range(runs):  # interleaved; both after the same think time
            time.sleep(THINK_S)
            started = time.monotonic()
            result = backend.run(request)
            cold.append((time.monotonic() - started) * 1000)
            backend.prestart(request)
            time.sleep(THINK_S)
            started = time.monotonic()
            result = backend.run(request)
            warm.append((time.monotonic() - started) * 1000)
            if result.status != "completed" or not result.prestarted:
                print(f"{runtime}: pre-started run not used: {result.reason}", file=sys.stderr)
                return 1
    finally:
        backend.discard_prestarted()
        backend.close()
    cold_m, warm_m = _median(cold), _median(warm)
    print(
        f"\n{runtime}, run_tests as the caller sees it ({THINK_S:g} s model turn before each): "
        f"cold {cold_m} ms, pre-started {warm_m} ms ({warm_m / cold_m:.2f}x)"
    )
    return 0
