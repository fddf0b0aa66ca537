"""Making an environment from a resolution: download, check, unpack, hash, freeze.

1. the resolution is checked line by line again (``pins``), its wheels downloaded by us
   into a private work folder, hash-checked, and their declared unpacked sizes summed
   against the size limit before anything is unpacked (``wheels``, SR-12 D4);
   ``uv pip install --target <partial>/site --no-deps --require-hashes --no-index
   --find-links <work>/wheels`` then unpacks those files only (a wheel is a zip
   archive: nothing in it runs), with a private cache in the work folder, copied out
   (``--link-mode copy``); the work folder goes whatever happens;
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
import uuid
from pathlib import Path

from sandbox_agent.deps import store
from sandbox_agent.deps.bytecode import EXIT_OVER_BUDGET
from sandbox_agent.deps.deadline import Deadline
from sandbox_agent.deps.failures import classify
from sandbox_agent.deps.manifest import MANIFEST, SITE, Manifest, make_manifest, problems
from sandbox_agent.deps.pins import check_resolution
from sandbox_agent.deps.resolve import Resolution
from sandbox_agent.deps.target import PYTHON_MINOR
from sandbox_agent.deps.uvcmd import run_uv
from sandbox_agent.deps.wheels import fetch_wheels
from sandbox_agent.errors import DependencyError
from sandbox_supervisor.deps import SITE_DIR

INSTALL_TIMEOUT_S = 900.0
COMPILE_TIMEOUT_S = 600.0
COMPILE_MEMORY_BYTES = 1024 * 1024 * 1024
"""The bytecode compile's address space (numpy's modules compile in well under 200 MiB;
a hostile module that needs more stays source: SR-12 retest R3)."""
COMPILER = Path(__file__).with_name("bytecode.py")
MiB = 1024 * 1024
REMOVED = ("bin", ".lock")
"""uv's console scripts (their shebang names the host's interpreter) and its lock file."""


def compile_bytecode(site: Path, *, budget: int, deadline: Deadline | None = None) -> bool:
    """Compile ``site``'s modules with this interpreter when its bytecode is the image's
    (same minor version, same magic number), with tracebacks naming ``/deps/site``,
    within ``budget`` bytes of bytecode, ``COMPILE_MEMORY_BYTES`` and the phase's time
    (``deps.bytecode``). Files that do not compile are left as source.

    Raises:
        DependencyError: ``too_large``: the bytecode alone is over ``budget``;
            ``timeout``: the phase ran out of time while compiling.
    """
    if sys.version_info[:2] != PYTHON_MINOR:
        return False
    deadline = deadline or Deadline()
    command = [
        sys.executable, "-I", str(COMPILER), str(site), SITE_DIR,
        str(max(budget, 0)), str(COMPILE_MEMORY_BYTES),
    ]  # fmt: skip
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=deadline.left(COMPILE_TIMEOUT_S),
            check=False,
        )
    except subprocess.TimeoutExpired:
        deadline.left(0.0)  # the phase's time is what ran out: its error
        return False  # the compile's own limit: the environment stays source
    if done.returncode == EXIT_OVER_BUDGET:
        raise DependencyError(
            "too_large",
            f"the environment's bytecode alone is over the {budget / MiB:.1f} MiB left of the "
            "limit (raise it with --deps-max-bytes BYTES)",
        )
    return done.returncode == 0


def _install(resolution: Resolution, site: Path, work: Path, deadline: Deadline) -> None:
    lock = work / "resolution.txt"
    lock.write_text(resolution.text, encoding="utf-8")
    args = [
        "pip", "install",
        "--target", str(site),
        "--no-deps", "--require-hashes", "-r", str(lock),
        "--python-version", resolution.target.python_version,
        "--python-platform", resolution.target.platform,
        "--only-binary", ":all:",
        "--no-index", "--find-links", str(work / "wheels"),
        "--cache-dir", str(work / "cache"),
        "--link-mode", "copy",
        "--no-progress",
    ]  # fmt: skip
    done = run_uv(args, timeout_s=deadline.left(INSTALL_TIMEOUT_S), cwd=work)
    if done.returncode != 0:
        raise classify(done.stderr, index_url="(the downloaded wheels)",
                       platform=resolution.target.platform)  # fmt: skip


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


def make(
    resolution: Resolution, *, index_url: str, max_bytes: int, deadline: Deadline | None = None
) -> Path:
    """Make the environment of ``resolution`` under its hash; its folder.

    Raises:
        DependencyError: a line that is not a pin (``declaration``), a download or hash
            check failed, the environment is larger than ``max_bytes`` (``too_large``,
            before anything is unpacked when its wheels say so), out of time (``timeout``).
    """
    deadline = deadline or Deadline()
    pins = check_resolution(resolution.text, "the resolution to install")
    envs = store.envs_dir()
    envs.mkdir(parents=True, exist_ok=True)
    store.remove_stale_partials()
    final = envs / resolution.sha256()
    partial = envs / f"{store.PARTIAL_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}"
    work = partial.with_name(partial.name + "-work")
    try:
        site = partial / SITE
        site.mkdir(parents=True)
        work.mkdir(mode=0o700)
        fetch_wheels(
            pins,
            index_url=index_url,
            target=resolution.target,
            into=work / "wheels",
            max_bytes=max_bytes,
            deadline=deadline,
        )
        _install(resolution, site, work, deadline)
        _strip(site)
        size = _size(site)
        if size > max_bytes:
            raise DependencyError(
                "too_large",
                f"the environment is {size / MiB:.1f} MiB, over the limit of "
                f"{max_bytes / MiB:.1f} MiB (raise it with --deps-max-bytes BYTES)",
            )
        bytecode = compile_bytecode(site, budget=max_bytes - size, deadline=deadline)
        size = _size(site)
        if size > max_bytes:  # the compile counts its own bytes; this counts them all
            raise DependencyError(
                "too_large",
                f"the environment with its bytecode is {size / MiB:.1f} MiB, over the limit "
                f"of {max_bytes / MiB:.1f} MiB (raise it with --deps-max-bytes BYTES)",
            )
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
        store.remove_tree(work)
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
