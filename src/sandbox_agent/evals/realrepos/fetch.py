"""A project's sdist, fetched once and checked, unpacked once into a pristine tree.

```
<state>/realrepos/sdists/<sha256>.tar.gz    as downloaded, hash-checked
<state>/realrepos/trees/<sha256>/<root>/    unpacked: regular files and folders only
```

Unpacking reads the archive as data (``tarfile``'s ``data`` filter, and links,
devices and anything outside the root left out); nothing of the project runs on
the host. The conftest of the task file is written into the tree.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
import time
import urllib.request
import uuid
from pathlib import Path

from sandbox_agent.errors import SetupError, UsageError
from sandbox_agent.evals.realrepos.taskfile import Project
from sandbox_agent.settings import state_home

DOWNLOAD_TIMEOUT_S = 60.0
MAX_SDIST_BYTES = 64 * 1024 * 1024


def realrepos_home() -> Path:
    return state_home() / "realrepos"


def _download(project: Project, target: Path) -> None:
    partial = target.with_name(f".{target.name}.{os.getpid()}.{uuid.uuid4().hex[:6]}")
    # https://files.pythonhosted.org only: the task file's pattern for ``url``.
    request = urllib.request.Request(project.url, headers={"User-Agent": "sandbox-agent"})  # noqa: S310
    label = f"{project.name} {project.version}"
    try:
        with urllib.request.urlopen(request, timeout=DOWNLOAD_TIMEOUT_S) as answer:  # noqa: S310
            data = answer.read(MAX_SDIST_BYTES + 1)
    except OSError as error:
        raise SetupError(f"cannot fetch {label} ({project.url}): {error}") from None
    if len(data) > MAX_SDIST_BYTES:
        raise SetupError(f"{project.url} is larger than {MAX_SDIST_BYTES} bytes")
    if hashlib.sha256(data).hexdigest() != project.sha256:
        raise UsageError(f"{label}: the sdist's sha256 is not the pinned one")
    partial.write_bytes(data)
    partial.replace(target)


def sdist(project: Project, *, download: bool = True) -> tuple[Path, bool]:
    """The hash-checked sdist (fetched when missing, if ``download``); whether it was
    fetched now.

    Raises:
        SetupError: it cannot be downloaded, or is missing and not ``download``.
        UsageError: what was downloaded is not the pinned file.
    """
    target = realrepos_home() / "sdists" / f"{project.sha256}.tar.gz"
    if target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == project.sha256:
        return target, False
    if not download:
        raise SetupError(
            f"the sdist of {project.name} {project.version} is not on this host ({target}), "
            "and nothing is fetched here: 'sandbox-agent eval --suite realrepos' fetches it"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    _download(project, target)
    return target, True


def _extract(archive: Path, into: Path, root: str) -> None:
    with tarfile.open(archive, "r:gz") as tar:
        members = [
            member
            for member in tar.getmembers()
            if (member.isreg() or member.isdir())
            and (member.name == root or member.name.startswith(f"{root}/"))
        ]
        tar.extractall(into, members=members, filter="data")


def pristine_tree(project: Project, *, download: bool = True) -> Path:
    """The project's tree as released (plus its sandbox conftest), made once; read it only.

    Args:
        download: fetch the sdist when this host lacks it (else a ``SetupError``).

    Raises:
        SetupError: the sdist cannot be fetched.
        UsageError: it is not the pinned file, or has no ``root`` folder.
    """
    base = realrepos_home() / "trees" / project.sha256
    tree = base / project.root
    if (base / ".complete").is_file():
        return tree
    archive, _ = sdist(project, download=download)
    partial = base.with_name(f".{base.name}.{os.getpid()}.{uuid.uuid4().hex[:6]}")
    try:
        partial.mkdir(parents=True)
        _extract(archive, partial, project.root)
        if not (partial / project.root).is_dir():
            raise UsageError(f"{project.name}: the sdist has no folder {project.root}")
        if project.conftest is not None:
            (partial / project.root / "conftest.py").write_text(project.conftest, encoding="utf-8")
        for folder, _dirs, files in os.walk(partial):
            os.chmod(folder, 0o755)  # noqa: S103 - the sandbox's uid reads copies of it
            for name in files:
                os.chmod(Path(folder) / name, 0o644)
        (partial / ".complete").write_text(f"{time.time()}\n")
        if base.exists():
            shutil.rmtree(base)
        partial.rename(base)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return tree
