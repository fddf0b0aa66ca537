"""Making an environment from a resolution: download, check, unpack, hash, freeze.

1. ``uv pip install --target <partial>/site --no-deps --require-hashes`` of the
   resolution: every file is checked against the resolution's hashes, wheels only,
   unpacked by uv (a wheel is a zip archive: nothing in it runs), copied out of uv's
   cache (``--link-mode copy``: no hard link to a file uv may change later);
2. console scripts (``bin/``, made for the host's interpreter) and uv's lock file go;
3. the size limit (``--deps-max-bytes``) is checked;
4. bytecode is compiled ahead when the host's Python is the image's minor version
   (compiling parses, it runs nothing), so a test run does not compile the
   dependencies every time under ``-B``;
5. the manifest (every file hashed) is written, everything made read-only, and the
   folder renamed into place, whole. A failure at any step removes the partial folder:
   nothing half-built is ever found under the environment's name.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

from sandbox_agent.deps import store
from sandbox_agent.deps.failures import classify
from sandbox_agent.deps.manifest import MANIFEST, SITE, Manifest, make_manifest, problems
from sandbox_agent.deps.resolve import Resolution
from sandbox_agent.deps.target import PYTHON_MINOR
from sandbox_agent.deps.uvcmd import run_uv
from sandbox_agent.errors import DependencyError
from sandbox_supervisor.deps import SITE_DIR

INSTALL_TIMEOUT_S = 900.0
COMPILE_TIMEOUT_S = 600.0
MiB = 1024 * 1024
REMOVED = ("bin", ".lock")
"""uv's console scripts (their shebang names the host's interpreter) and its lock file."""


def compile_bytecode(site: Path) -> bool:
    """Compile ``site``'s modules with this interpreter when its bytecode is the image's
    (same minor version, same magic number), with tracebacks naming ``/deps/site``.
    Files that do not compile are left as source."""
    if sys.version_info[:2] != PYTHON_MINOR:
        return False
    command = [
        sys.executable, "-I", "-m", "compileall", "-q", "-j", "0",
        "-s", str(site), "-p", SITE_DIR, str(site),
    ]  # fmt: skip
    try:
        subprocess.run(command, capture_output=True, timeout=COMPILE_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return False
    return True


def _install(resolution: Resolution, site: Path, index_url: str) -> None:
    with tempfile.NamedTemporaryFile("w", suffix=".txt", prefix="sandbox-agent-lock-") as lock:
        lock.write(resolution.text)
        lock.flush()
        args = [
            "pip", "install",
            "--target", str(site),
            "--no-deps", "--require-hashes", "-r", lock.name,
            "--python-version", resolution.target.python_version,
            "--python-platform", resolution.target.platform,
            "--only-binary", ":all:",
            "--index-url", index_url,
            "--link-mode", "copy",
            "--no-progress",
        ]  # fmt: skip
        done = run_uv(args, timeout_s=INSTALL_TIMEOUT_S)
    if done.returncode != 0:
        raise classify(done.stderr, index_url=index_url, platform=resolution.target.platform)


def _size(site: Path) -> int:
    return sum(
        (Path(folder) / name).lstat().st_size
        for folder, _dirs, files in os.walk(site)
        for name in files
    )


def _strip(site: Path) -> None:
    for name in REMOVED:
        path = site / name
        if path.is_dir() and not path.is_symlink():
            store.remove_tree(path)
        else:
            path.unlink(missing_ok=True)
    for folder, _dirs, files in os.walk(site):
        for name in files:
            path = Path(folder) / name
            if path.is_symlink() or not path.is_file():
                path.unlink()  # a wheel holds regular files only; anything else goes


def make(resolution: Resolution, *, index_url: str, max_bytes: int) -> Path:
    """Make the environment of ``resolution`` under its hash; its folder.

    Raises:
        DependencyError: a download or hash check failed (``classify``), or the
            environment is larger than ``max_bytes`` (``too_large``).
    """
    envs = store.envs_dir()
    envs.mkdir(parents=True, exist_ok=True)
    store.remove_stale_partials()
    final = envs / resolution.sha256()
    partial = envs / f"{store.PARTIAL_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        site = partial / SITE
        site.mkdir(parents=True)
        _install(resolution, site, index_url)
        _strip(site)
        size = _size(site)
        if size > max_bytes:
            raise DependencyError(
                "too_large",
                f"the environment is {size / MiB:.1f} MiB, over the limit of "
                f"{max_bytes / MiB:.1f} MiB (raise it with --deps-max-bytes BYTES)",
            )
        bytecode = compile_bytecode(site)
        manifest = make_manifest(
            site,
            env_hash=resolution.sha256(),
            source=resolution.source,
            target=resolution.target,
            bytecode=bytecode,
        )
        (partial / MANIFEST).write_bytes(manifest.to_bytes())
        store.make_read_only(partial)
        try:
            partial.rename(final)
        except OSError:
            if not (final / MANIFEST).is_file():
                raise
            # Another run made the same environment meanwhile: theirs is as good.
    finally:
        store.remove_tree(partial)
    return final


def load(root: Path, env_hash: str) -> Manifest | None:
    """The manifest of an environment already made, if it is whole and unchanged
    (names, sizes, read-only modes); None otherwise (it is then made again)."""
    try:
        manifest = Manifest.model_validate_json((root / MANIFEST).read_bytes())
    except (OSError, ValueError):
        return None
    if manifest.hash != env_hash or sorted(os.listdir(root)) != sorted([MANIFEST, SITE]):
        return None
    if problems(root, manifest):
        return None
    return manifest
