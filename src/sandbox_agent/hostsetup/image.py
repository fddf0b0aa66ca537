"""The runner image, built locally without any registry (docs/SETUP.md, item 3 of
"What `make demo` and `make test` set up").

Recipe: a ``debootstrap --variant=minbase`` root filesystem of Debian bookworm with
``python3`` and ``python3-pytest``; shells, package managers, interpreters other
than Python and set-uid files removed; the trusted ``sandbox_supervisor`` package
added read-only to Python's standard library folder; then ``docker import``.

The tag is the hash of the inputs (this recipe and the supervisor's source), so a
changed input gives a new tag. The image ID that preflight and every run pin is
recorded in ``image.json`` under the state folder. The debootstrap tree, the slow
part (~40 s), is cached by the hash of its own inputs only, so a supervisor change
rebuilds in seconds.

Run as ``python -m sandbox_agent.hostsetup.image [ensure|build|show]``.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from sandbox_agent import settings
from sandbox_agent.errors import SetupError

if TYPE_CHECKING:
    import docker

IMAGE_REPOSITORY = "sandbox-agent-runner"
DOCKER_API_VERSION = "1.41"
"""Debian's dockerd 20.10 speaks API 1.41; the client must not ask for more."""

SUITE = "bookworm"
MIRROR = os.environ.get("SANDBOX_AGENT_DEBIAN_MIRROR", "http://deb.debian.org/debian")
PACKAGES = ("python3", "python3-pytest")
PYTHON_STDLIB = "usr/lib/python3.11"
WORKSPACE = "workspace"
DEPS = "deps"
"""An empty folder: where a repository's dependency environment is mounted (issue 17);
PID 1's attestation finds it empty when none is."""
SANDBOX_UID = 10001

# Removed from the image: anything that would let a workload run a shell, install
# software, or gain privileges. The workload still has Python: that is the point.
REMOVE_GLOBS = (
    "usr/bin/bash",
    "usr/bin/rbash",
    "usr/bin/dash",
    "usr/bin/sh",
    "bin/sh",
    "bin/bash",
    "bin/dash",
    "usr/bin/apt*",
    "usr/bin/dpkg*",
    "usr/bin/debconf*",
    "usr/bin/perl*",
    "usr/bin/su",
    "usr/bin/login",
    "usr/bin/passwd",
    "usr/bin/chsh",
    "usr/bin/chfn",
    "usr/bin/newgrp",
    "usr/bin/gpasswd",
    "usr/bin/mount",
    "usr/bin/umount",
    "usr/sbin/*",
    "usr/lib/apt",
    "usr/lib/dpkg",
    "var/lib/apt",
    "var/lib/dpkg",
    "var/cache/apt",
    "var/cache/debconf",
    "var/log/*",
    "usr/share/doc",
    "usr/share/man",
    "usr/share/info",
    "usr/share/locale",
    "etc/apt",
    "etc/dpkg",
)

SUPERVISOR_SOURCE = Path(__file__).resolve().parents[2] / "sandbox_supervisor"


class ImageRecord(BaseModel):
    """What the build recorded: the tag by inputs hash, and the image ID runs must use."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tag: str
    image_id: str
    inputs_sha256: str
    built_at: float


def _supervisor_files() -> list[Path]:
    return sorted(
        p for p in SUPERVISOR_SOURCE.rglob("*.py") if "__pycache__" not in p.parts and p.is_file()
    )


def rootfs_inputs_sha256() -> str:
    """Hash of what the debootstrap tree depends on: suite, mirror-independent package list."""
    digest = hashlib.sha256()
    digest.update(json.dumps([SUITE, PACKAGES, "minbase"]).encode())
    return digest.hexdigest()


def inputs_sha256() -> str:
    """Hash of every input of the image: this recipe and the supervisor's source files."""
    digest = hashlib.sha256()
    digest.update(Path(__file__).read_bytes())
    for path in _supervisor_files():
        digest.update(str(path.relative_to(SUPERVISOR_SOURCE)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def expected_tag() -> str:
    """``sandbox-agent-runner:<inputs hash>``: changes whenever an input changes."""
    return f"{IMAGE_REPOSITORY}:{inputs_sha256()[:16]}"


def load_record() -> ImageRecord | None:
    """The recorded image, or None when none was built (or the record is unreadable)."""
    path = settings.image_record_path()
    try:
        return ImageRecord.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def current_record() -> ImageRecord:
    """The record of the image built from the current inputs.

    Raises:
        SetupError: no image was built from these inputs (run ``make image``).
    """
    record = load_record()
    if record is None or record.tag != expected_tag():
        raise SetupError(
            f"the runner image {expected_tag()} is not built: run 'make image' "
            "(or 'python -m sandbox_agent.hostsetup.image ensure')"
        )
    return record


def _docker_client() -> docker.DockerClient:
    import docker

    return docker.from_env(version=DOCKER_API_VERSION, timeout=600)


def _image_exists(image_id: str, tag: str | None = None) -> bool:
    """Whether ``image_id`` is there; with ``tag``, made sure it carries that tag too (an
    image whose tag another checkout's build took away is tagged again, not rebuilt)."""
    import docker.errors

    client = _docker_client()
    try:
        image = client.images.get(image_id)
        if tag is not None and tag not in image.tags:
            repository, _, version = tag.partition(":")
            image.tag(repository, version)
    except docker.errors.ImageNotFound:
        return False
    finally:
        client.close()
    return True


def _debootstrap_cache() -> Path:
    cache = settings.state_home() / "rootfs-cache" / f"{SUITE}-{rootfs_inputs_sha256()[:16]}.tar"
    if cache.exists():
        return cache
    if shutil.which("debootstrap") is None:
        raise SetupError("debootstrap is missing: install it ('apt-get install debootstrap')")
    cache.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sandbox-agent-rootfs-") as tmp:
        target = Path(tmp) / "rootfs"
        print(f"image: debootstrap {SUITE} ({', '.join(PACKAGES)}), about 40 s", file=sys.stderr)
        command = [
            "debootstrap",
            "--variant=minbase",
            f"--include={','.join(PACKAGES)}",
            SUITE,
            str(target),
            MIRROR,
        ]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            tail = (done.stdout + done.stderr).strip().splitlines()[-1:] or ["no output"]
            raise SetupError(f"debootstrap failed ({tail[0]}): check the Debian mirror {MIRROR}")
        partial = cache.with_suffix(".partial")
        subprocess.run(
            ["tar", "--numeric-owner", "-C", str(target), "-cf", str(partial), "."],
            check=True,
        )
        partial.replace(cache)
    return cache


def _strip_and_add_supervisor(root: Path) -> None:
    for pattern in REMOVE_GLOBS:
        # glob.glob, unlike Path.glob, also lists dangling symlinks (sh -> dash, once
        # dash is gone), which must go too.
        for name in glob.glob(str(root / pattern)):
            path = Path(name)
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
    for path in root.rglob("*"):
        if path.is_symlink() or not path.is_file():
            continue
        if path.stat().st_mode & 0o6000:
            path.unlink()
    target = root / PYTHON_STDLIB / "sandbox_supervisor"
    shutil.copytree(
        SUPERVISOR_SOURCE, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
    )
    # Bytecode compiled by the image's own Python: PID 1 runs with -B on a read-only
    # root, so without it every run compiles the supervisor again (~60 ms of each start).
    # checked-hash: a .pyc is used only while it matches its source byte for byte.
    compiled = subprocess.run(
        [
            "chroot",
            str(root),
            "/usr/bin/python3",
            "-I",
            "-m",
            "compileall",
            "-q",
            "--invalidation-mode",
            "checked-hash",
            f"/{PYTHON_STDLIB}/sandbox_supervisor",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if compiled.returncode != 0:
        raise SetupError(f"compiling the supervisor in the image failed: {compiled.stderr.strip()}")
    for path in [target, *target.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    (root / WORKSPACE).mkdir(exist_ok=True)
    (root / DEPS).mkdir(mode=0o755, exist_ok=True)
    (root / "tmp").chmod(0o1777)


def build() -> ImageRecord:
    """Build the image from the current inputs and record it.

    Raises:
        SetupError: debootstrap or the Docker import failed.
    """
    tag = expected_tag()
    cache = _debootstrap_cache()
    with tempfile.TemporaryDirectory(prefix="sandbox-agent-image-") as tmp:
        root = Path(tmp) / "rootfs"
        root.mkdir()
        subprocess.run(["tar", "--numeric-owner", "-C", str(root), "-xf", str(cache)], check=True)
        _strip_and_add_supervisor(root)
        archive = Path(tmp) / "rootfs.tar"
        with tarfile.open(archive, "w") as tar:
            for child in sorted(root.iterdir()):
                tar.add(child, arcname=child.name)
        repository, _, version = tag.partition(":")
        client = _docker_client()
        try:
            client.api.import_image_from_file(
                str(archive),
                repository=repository,
                tag=version,
                changes=[f"USER {SANDBOX_UID}:{SANDBOX_UID}", f"WORKDIR /{WORKSPACE}"],
            )
            image_id = str(client.images.get(tag).id)
        except Exception as error:  # the SDK raises several unrelated types here
            raise SetupError(f"docker import failed ({error}): is the daemon running?") from error
        finally:
            client.close()
    return _record_image(tag, image_id)


def _prune_previous_image(previous: ImageRecord | None, keep: str) -> None:
    """Remove the image this state folder recorded before (100 MB each), if it is not
    ``keep``. Only that one: another checkout or state folder on the same daemon may
    be running its own runner image right now (one of its tests, an eval), and a
    build here must never pull it from under it. One in use by a container, or
    tagged elsewhere, stays."""
    import docker.errors

    if previous is None or previous.image_id == keep:
        return
    client = _docker_client()
    try:
        with contextlib.suppress(docker.errors.APIError):
            client.images.remove(previous.image_id, force=False)
    finally:
        client.close()


def adopt(source_tag: str) -> ImageRecord:
    """Record an image built another way (``make image-online``) as the runner image.

    It is tagged with the current inputs' tag, so runs and preflight pin it exactly
    like a debootstrap build.

    Raises:
        SetupError: no image has that tag.
    """
    import docker.errors

    tag = expected_tag()
    repository, _, version = tag.partition(":")
    client = _docker_client()
    try:
        image = client.images.get(source_tag)
        image.tag(repository, version)
        image_id = str(image.id)
    except docker.errors.ImageNotFound as error:
        raise SetupError(f"no image tagged {source_tag}: build it first") from error
    finally:
        client.close()
    return _record_image(tag, image_id)


def _record_image(tag: str, image_id: str) -> ImageRecord:
    """Record ``image_id`` as the runner image of the current inputs; drop the one this
    state folder recorded before."""
    previous = load_record()
    record = _write_record(
        ImageRecord(tag=tag, image_id=image_id, inputs_sha256=inputs_sha256(), built_at=time.time())
    )
    _prune_previous_image(previous, keep=image_id)
    return record


def _write_record(record: ImageRecord) -> ImageRecord:
    path = settings.image_record_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(record.model_dump_json(indent=2) + "\n", encoding="utf-8")
    partial.replace(path)
    return record


def ensure() -> ImageRecord:
    """The recorded image if it matches the current inputs and exists; otherwise build it."""
    record = load_record()
    if (
        record is not None
        and record.tag == expected_tag()
        and _image_exists(record.image_id, record.tag)
    ):
        return record
    return build()


def main(argv: list[str] | None = None) -> int:
    """``ensure`` (default), ``build`` (always), ``show`` (print the record) or ``adopt TAG``."""
    args = sys.argv[1:] if argv is None else argv
    action = args[0] if args else "ensure"
    try:
        if action == "ensure":
            record = ensure()
        elif action == "build":
            record = build()
        elif action == "show":
            record = current_record()
        elif action == "adopt" and len(args) == 2:
            record = adopt(args[1])
        else:
            print("usage: python -m sandbox_agent.hostsetup.image [ensure|build|show|adopt TAG]")
            return 2
    except SetupError as error:
        print(f"image: {error}", file=sys.stderr)
        return 2
    print(f"image: {record.tag} {record.image_id}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
