"""What a dependency environment costs (issue 17), measured side by side.

    python -m benchmarks.deps_bench [--runs N] [--skip-numpy]

1. Making it: a small environment (``jsonpointer``, what realrepos' jsonpatch needs) and
   a large one with a C extension (``numpy``), each from PyPI: the first time with
   nothing cached (resolve, download, unpack, compile bytecode, hash every file), the
   first time for this store with uv's download cache warm, and every time after (the
   recorded resolution and a walk of the tree: no uv, no network).
2. Using it: a verified, attested ``run_tests`` of the same tiny suite with no
   environment, the small one and numpy's mounted, interleaved, on runc and runsc:
   the extra bind mount plus PID 1's ``dependencies`` check.
3. The alternative not taken: an image per environment (``docker import`` of the
   runner's root filesystem with the environment in it), timed once.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SMALL = "jsonpointer==3.0.0\n"
LARGE = "numpy==2.2.1\n"
SUITE = """
import unittest

class Tiny(unittest.TestCase):
    def test_one(self): self.assertEqual(1, 1)
    def test_two(self): self.assertTrue(True)
"""


def _repo(root: Path, requirements: str | None) -> Path:
    root.mkdir(parents=True)
    os.chmod(root, 0o755)  # noqa: S103 - the sandbox's uid reads it
    (root / "test_tiny.py").write_text(SUITE)
    os.chmod(root / "test_tiny.py", 0o644)
    if requirements is not None:
        (root / "requirements.txt").write_text(requirements)
    return root


def _prepare(repo: Path, store: Path, uv_cache: Path) -> tuple[float, Any]:
    from sandbox_agent.deps import prepare_environment

    os.environ["SANDBOX_AGENT_DEPS_HOME"] = str(store)
    os.environ["UV_CACHE_DIR"] = str(uv_cache)
    started = time.monotonic()
    environment = prepare_environment(repo)
    return (time.monotonic() - started) * 1000, environment


def _making(name: str, requirements: str, scratch: Path, runs: int) -> Any:
    cold, warm_uv, found = [], [], []
    environment = None
    for trial in range(runs):
        base = scratch / f"{name}-{trial}"
        repo = _repo(base / "repo", requirements)
        uv_cache = base / "uv-cache"
        ms, _ = _prepare(repo, base / "store-a", uv_cache)
        cold.append(ms)
        ms, environment = _prepare(repo, base / "store-b", uv_cache)
        warm_uv.append(ms)
        for _ in range(5):
            ms, environment = _prepare(repo, base / "store-b", uv_cache)
            found.append(ms)
    print(
        f"{name}: {len(environment.packages)} packages, {environment.size_bytes / 1e3:.0f} KB | "
        "first time "
        f"{statistics.median(cold) / 1000:.2f} s (nothing cached), "
        f"{statistics.median(warm_uv) / 1000:.2f} s (uv's downloads cached), "
        f"after: {statistics.median(found):.1f} ms (median of {len(found)})"
    )
    return environment


def _using(environments: dict[str, Any], scratch: Path, runs: int, runtime: str) -> None:
    from sandbox_agent.sandbox.base import SandboxRequest
    from sandbox_agent.sandbox.docker.docker_backend import DockerBackend
    from sandbox_supervisor.launch import RUNNER_ARGV

    repo = _repo(scratch / f"use-{runtime}", None)
    backend = DockerBackend(reap_on_first_use=False)
    times: dict[str, list[float]] = {name: [] for name in environments}
    attest: dict[str, list[float]] = {name: [] for name in environments}
    try:
        for trial in range(runs + 1):
            for name, environment in environments.items():
                request = SandboxRequest(
                    argv=(*RUNNER_ARGV, "unittest"),
                    workspace=repo,
                    runtime=runtime,  # type: ignore[arg-type]
                    environment=None if environment is None else environment.mount(),
                )
                started = time.monotonic()
                result = backend.run(request)
                if result.status != "completed":
                    raise SystemExit(f"{name} on {runtime}: {result.status} {result.reason}")
                if trial:  # the first round warms the page cache
                    times[name].append((time.monotonic() - started) * 1000)
                    attest[name].append(result.phase_ms.get("attest", 0.0))
    finally:
        backend.close()
    base = statistics.median(times["none"])
    cells = ", ".join(
        f"{name} {statistics.median(values):.0f} ms ({statistics.median(values) / base:.2f}x; "
        f"attest {statistics.median(attest[name]):.0f} ms)"
        for name, values in times.items()
    )
    print(f"run_tests on {runtime}, median of {runs}: {cells}")


def _image_alternative(environment: Any) -> None:
    """One ``docker import`` of the runner's root filesystem plus the environment."""
    from sandbox_agent.hostsetup import image
    from sandbox_agent.settings import state_home

    caches = sorted((state_home() / "rootfs-cache").glob("*.tar"))
    if not caches or environment is None:
        print("image alternative: no cached root filesystem here; not measured")
        return
    with tempfile.TemporaryDirectory(prefix="deps-bench-image-") as tmp:
        archive = Path(tmp) / "rootfs+env.tar"
        started = time.monotonic()
        subprocess.run(["cp", str(caches[-1]), str(archive)], check=True)
        command = ["tar", "-rf", str(archive), "-C", str(environment.path)]
        subprocess.run([*command, "--transform", "s,^,deps/,", "."], check=True)
        tag = f"deps-bench-alternative:{os.getpid()}"
        subprocess.run(["docker", "import", str(archive), tag], check=True, capture_output=True)
        seconds = time.monotonic() - started
        size = archive.stat().st_size
        subprocess.run(["docker", "rmi", tag], check=True, capture_output=True)
    print(
        f"image alternative ({image.SUITE} root filesystem + environment, docker import): "
        f"{seconds:.1f} s and {size / 1e6:.0f} MB per environment, against 0 s and 0 MB "
        "for the bind mount"
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.deps_bench")
    parser.add_argument("--runs", type=int, default=3, help="trials of each making (network)")
    parser.add_argument("--use-runs", type=int, default=9, help="sandbox runs per variant")
    parser.add_argument("--skip-numpy", action="store_true")
    args = parser.parse_args(argv)
    saved = {key: os.environ.get(key) for key in ("SANDBOX_AGENT_DEPS_HOME", "UV_CACHE_DIR")}
    try:
        with tempfile.TemporaryDirectory(prefix="deps-bench-") as tmp:
            scratch = Path(tmp)
            os.chmod(scratch, 0o755)  # noqa: S103 - environments under it are mounted
            environments: dict[str, Any] = {"none": None}
            environments["small"] = _making("small (jsonpointer)", SMALL, scratch, args.runs)
            if not args.skip_numpy:
                environments["numpy"] = _making("large (numpy)", LARGE, scratch, args.runs)
            for runtime in ("runc", "runsc"):
                _using(environments, scratch, args.use_runs, runtime)
            _image_alternative(environments.get("numpy") or environments["small"])
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
