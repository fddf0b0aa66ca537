"""From a declaration to a resolution: every package pinned, with the hashes of its files.

- Declarations are resolved by ``uv pip compile`` for the runner's interpreter and
  platform, wheels only, hashes generated from the index; a hashed requirement line of
  the repository narrows its package to those hashes (theirs win).
- A ``pylock.toml`` is read here (packages by name, version, marker and hashes; a
  package from a path, URL or VCS is refused); a ``uv.lock`` goes through
  ``uv export --frozen``, which reads the lock and resolves nothing.

The resolution text is what ``uv pip install --require-hashes --no-deps`` reads. It is
recorded the first time (``store.resolution_path``) and reused while the declaration
is unchanged, so a second run neither resolves again nor moves to newer versions.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from pydantic import BaseModel, ConfigDict

from sandbox_agent.deps.declared import PYLOCK, PYPROJECT, UV_LOCK, Declaration, Lock
from sandbox_agent.deps.failures import classify
from sandbox_agent.deps.target import RUNNER_OWN_PACKAGES, Target
from sandbox_agent.deps.uvcmd import run_uv
from sandbox_agent.errors import DependencyError

RESOLVE_TIMEOUT_S = 300.0
RESOLVER_VERSION = 1
"""Bump when the resolution text changes shape: every recorded resolution is then redone."""


class Resolution(BaseModel):
    """Pinned requirements with hashes, for one target."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str
    """``name==version [; marker] --hash=sha256:... ...``, one package a line, sorted."""
    source: str
    """``resolved`` (uv pip compile), ``pylock.toml`` or ``uv.lock``."""
    target: Target

    def sha256(self) -> str:
        """The environment's identity: the same resolution for the same target is the
        same environment."""
        payload = f"{RESOLVER_VERSION}\n{self.target.model_dump_json()}\n{self.text}"
        return hashlib.sha256(payload.encode()).hexdigest()


def resolution_key(declaration: Declaration, target: Target, index_url: str) -> str:
    """Names the recorded resolution of ``declaration`` (its content, not its files)."""
    payload = f"{RESOLVER_VERSION}\n{declaration.key()}\n{target.model_dump_json()}\n{index_url}"
    return hashlib.sha256(payload.encode()).hexdigest()


def _line(name: str, version: str, hashes: list[str], marker: str | None = None) -> str:
    spec = f"{name}=={version}" + (f" ; {marker}" if marker else "")
    return " ".join([spec, *(f"--hash=sha256:{digest}" for digest in sorted(set(hashes)))])


def parse_pinned(text: str) -> dict[str, tuple[str, str, list[str]]]:
    """uv's pinned output: canonical name -> (spelling, version, sha256s)."""
    pins: dict[str, tuple[str, str, list[str]]] = {}
    for line in text.replace("\\\n", " ").splitlines():
        words = line.split()
        if not words or words[0].startswith(("#", "-")):
            continue
        name, _, version = words[0].partition("==")
        hashes = [w.removeprefix("--hash=sha256:") for w in words if w.startswith("--hash=sha256:")]
        pins[str(canonicalize_name(name))] = (name, version, hashes)
    return pins


def _compile(declaration: Declaration, target: Target, index_url: str, scratch: Path) -> str:
    requirements = scratch / "requirements.in"
    # The runner's own packages are the image's: not declared here, so that their own
    # dependencies are not installed for nothing (a plugin that needs them still pulls
    # them in, and --no-emit-package keeps them out of the environment).
    wanted = [
        line
        for line in declaration.requirements
        if canonicalize_name(Requirement(line).name) not in RUNNER_OWN_PACKAGES
    ]
    if not wanted:
        return ""
    requirements.write_text("".join(f"{line}\n" for line in wanted))
    args = [
        "pip", "compile", str(requirements),
        "--python-version", target.python_version,
        "--python-platform", target.platform,
        "--only-binary", ":all:",
        "--generate-hashes",
        "--no-header", "--no-annotate", "--no-progress",
        "--index-url", index_url,
    ]  # fmt: skip
    for package in RUNNER_OWN_PACKAGES:
        args += ["--no-emit-package", package]
    if declaration.constraints:
        constraints = scratch / "constraints.txt"
        constraints.write_text("".join(f"{line}\n" for line in declaration.constraints))
        args += ["--constraint", str(constraints)]
    done = run_uv(args, timeout_s=RESOLVE_TIMEOUT_S)
    if done.returncode != 0:
        raise classify(done.stderr, index_url=index_url, platform=target.platform)
    pins = parse_pinned(done.stdout)
    for name, where, allowed in declaration.pinned_hashes:
        if name not in pins:
            continue
        spelling, version, hashes = pins[name]
        kept = sorted(set(hashes) & set(allowed))
        if not kept:
            raise DependencyError(
                "hash",
                f"{where}: {spelling}=={version} from the index matches none of its --hash values",
            )
        pins[name] = (spelling, version, kept)
    return "".join(f"{_line(*pins[name])}\n" for name in sorted(pins))


def _pylock(repo: Path) -> str:
    try:
        data: dict[str, Any] = tomllib.loads((repo / PYLOCK).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError) as error:
        raise DependencyError("declaration", f"pylock.toml cannot be read: {error}") from None
    packages = data.get("packages")
    if not isinstance(packages, list):
        raise DependencyError("declaration", "pylock.toml has no [[packages]]")
    lines = []
    for package in packages:
        if not isinstance(package, dict) or not isinstance(package.get("name"), str):
            raise DependencyError("declaration", "pylock.toml: a package without a name")
        name = package["name"]
        directory = package.get("directory")
        if isinstance(directory, dict) and directory.get("path") in (".", "./"):
            continue  # the repository itself: already on the tests' path
        if canonicalize_name(name) in RUNNER_OWN_PACKAGES:
            continue
        if any(key in package for key in ("vcs", "directory", "archive")):
            raise DependencyError(
                "declaration", f"pylock.toml: {name} comes from a path, URL or VCS, not an index"
            )
        version = package.get("version")
        files = [*(package.get("wheels") or []), package.get("sdist") or {}]
        hashes = [
            str(f["hashes"]["sha256"])
            for f in files
            if isinstance(f, dict) and isinstance(f.get("hashes"), dict) and "sha256" in f["hashes"]
        ]
        if not isinstance(version, str) or not hashes:
            raise DependencyError(
                "declaration", f"pylock.toml: {name} has no version or no sha256 hashes"
            )
        marker = package.get("marker")
        lines.append(_line(name, version, hashes, marker if isinstance(marker, str) else None))
    return "".join(f"{line}\n" for line in sorted(lines))


def _uv_export(repo: Path, lock: Lock, scratch: Path) -> str:
    for name in (PYPROJECT, UV_LOCK):
        shutil.copyfile(repo / name, scratch / name, follow_symlinks=False)
    args = [
        "export", "--frozen", "--format", "requirements.txt",
        "--no-emit-project", "--no-header", "--no-annotate", "--no-default-groups",
    ]  # fmt: skip
    for extra in lock.extras:
        args += ["--extra", extra]
    for group in lock.groups:
        args += ["--group", group]
    for package in RUNNER_OWN_PACKAGES:
        args += ["--no-emit-package", package]
    done = run_uv(args, timeout_s=RESOLVE_TIMEOUT_S, cwd=scratch)
    if done.returncode != 0:
        first = next((ln for ln in done.stderr.splitlines() if ln.strip()), "no output")
        raise DependencyError("declaration", f"uv.lock cannot be exported: {first.strip()[:200]}")
    entries: list[str] = []
    for raw in done.stdout.replace("\\\n", " ").splitlines():
        words = raw.split()
        if not words or words[0].startswith("#"):
            continue
        if words[0].startswith(("-e", ".", "/")) or " @ " in raw or "://" in words[0]:
            raise DependencyError(
                "declaration", f"uv.lock: '{words[0]}' comes from a path or URL, not an index"
            )
        entries.append(" ".join(words))
    return "".join(f"{entry}\n" for entry in sorted(entries))


def resolve(repo: Path, declaration: Declaration, target: Target, index_url: str) -> Resolution:
    """Pin every package of ``declaration`` for ``target``.

    Raises:
        DependencyError: no wheel for the target, a conflict, a package or version not on
            the index, hashes that do not match, an index that cannot be reached.
    """
    with tempfile.TemporaryDirectory(prefix="sandbox-agent-resolve-") as tmp:
        scratch = Path(tmp)
        if declaration.lock is None:
            return Resolution(
                text=_compile(declaration, target, index_url, scratch),
                source="resolved",
                target=target,
            )
        if declaration.lock.kind == "pylock.toml":
            return Resolution(text=_pylock(repo), source=PYLOCK, target=target)
        return Resolution(
            text=_uv_export(repo, declaration.lock, scratch), source=UV_LOCK, target=target
        )
