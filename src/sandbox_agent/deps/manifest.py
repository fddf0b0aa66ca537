"""An environment's manifest: what it holds, file by file, hashed.

``manifest.json`` sits at the environment's root beside ``site/``. It is canonical
JSON; its sha256 is the environment's pin in the sandbox spec and in PID 1's
attestation. It lists every file under ``site/`` with its size and sha256 (computed
once, when the environment is made), and the installed packages.
"""

from __future__ import annotations

import hashlib
import os
import stat
from email.parser import HeaderParser
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from sandbox_agent.canonical import canonical_json
from sandbox_agent.deps.models import Package
from sandbox_agent.deps.target import Target

MANIFEST = "manifest.json"
SITE = "site"


class FileEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    """Relative to ``site/``, ``/``-separated."""
    size: int
    sha256: str


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    v: Literal[1] = 1
    hash: str
    """The environment's identity: ``Resolution.sha256()``, also its folder's name."""
    source: str
    """``resolved``, ``pylock.toml`` or ``uv.lock``."""
    target: Target
    packages: tuple[Package, ...]
    size_bytes: int
    bytecode: bool
    """Whether ``.pyc`` files were compiled ahead (``build.compile_bytecode``)."""
    files: tuple[FileEntry, ...]

    def to_bytes(self) -> bytes:
        return canonical_json(self.model_dump(mode="json"))


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def walk(site: Path) -> list[tuple[str, os.stat_result]]:
    """Every entry under ``site`` (relative path, lstat), sorted; links are entries too.
    Plain ``os.scandir`` and strings: run on every use of an environment (thousands of
    files for numpy), where pathlib's objects cost ten times the system calls."""
    entries: list[tuple[str, os.stat_result]] = []

    def visit(folder: str, prefix: str) -> None:
        with os.scandir(folder) as listing:
            children = sorted(listing, key=lambda entry: entry.name)
        for entry in children:
            rel = prefix + entry.name
            info = entry.stat(follow_symlinks=False)
            entries.append((rel, info))
            if stat.S_ISDIR(info.st_mode):
                visit(entry.path, rel + "/")

    visit(str(site), "")
    return entries


def packages(site: Path) -> tuple[Package, ...]:
    """``Name`` and ``Version`` of every ``*.dist-info/METADATA`` directly in ``site``."""
    found = []
    for metadata in sorted(site.glob("*.dist-info/METADATA")):
        headers = HeaderParser().parsestr(metadata.read_text(encoding="utf-8", errors="replace"))
        if headers.get("Name") and headers.get("Version"):
            found.append(Package(name=str(headers["Name"]), version=str(headers["Version"])))
    return tuple(sorted(found, key=lambda p: p.name.lower()))


def make_manifest(
    site: Path, *, env_hash: str, source: str, target: Target, bytecode: bool
) -> Manifest:
    """The manifest of the regular files under ``site`` (there are no others: ``check``)."""
    files = tuple(
        FileEntry(path=rel, size=info.st_size, sha256=_sha256(site / rel))
        for rel, info in walk(site)
        if stat.S_ISREG(info.st_mode)
    )
    return Manifest(
        hash=env_hash,
        source=source,
        target=target,
        packages=packages(site),
        size_bytes=sum(entry.size for entry in files),
        bytecode=bytecode,
        files=files,
    )


def problems(root: Path, manifest: Manifest, *, contents: bool = False) -> list[str]:
    """What in ``root`` differs from ``manifest`` (empty: it is what was made).

    Names, types, sizes and the read-only modes always; with ``contents`` every file's
    sha256 too (done once, when the environment is made).
    """
    site = root / SITE
    found: list[str] = []
    listed = {entry.path: entry for entry in manifest.files}
    seen = set()
    for rel, info in walk(site):
        mode = info.st_mode
        if stat.S_ISDIR(mode):
            if mode & 0o222:
                found.append(f"{rel}/: writable")
            continue
        entry = listed.get(rel)
        if not stat.S_ISREG(mode) or entry is None:
            found.append(f"{rel}: not in the manifest")
            continue
        seen.add(rel)
        if info.st_size != entry.size or mode & 0o222:
            found.append(f"{rel}: size or mode changed")
        elif contents and _sha256(site / rel) != entry.sha256:
            found.append(f"{rel}: content changed")
    found.extend(f"{rel}: missing" for rel in sorted(set(listed) - seen))
    return found
