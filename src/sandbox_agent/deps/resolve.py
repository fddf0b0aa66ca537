"""From a declaration to a resolution: every package pinned, with the hashes of its files.

- Declarations are resolved by ``uv pip compile`` for the runner's interpreter and
  platform, wheels only, hashes generated from the index; a hashed requirement line of
  the repository narrows its package to those hashes (theirs win).
- A ``pylock.toml`` is read here (packages by name, version, marker and hashes; a
  package from a path, URL or VCS is refused); a ``uv.lock`` is read here too
  (``uvlock``): nothing is resolved, and no lock but the repository's is read.

The resolution text is what ``uv pip install --require-hashes --no-deps`` reads. Every
line of it is rebuilt from parsed values and checked (``pins``): here, when it is read
back from the store, and before it is installed. It is recorded the first time
(``store.resolution_path``) and reused while the declaration is unchanged, so a second
run neither resolves again nor moves to newer versions.
"""

from __future__ import annotations

import hashlib
import tomllib
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from pydantic import BaseModel, ConfigDict, field_validator

from sandbox_agent.deps.deadline import Deadline
from sandbox_agent.deps.declared import PYLOCK, UV_LOCK, Declaration
from sandbox_agent.deps.failures import classify
from sandbox_agent.deps.pins import Pin, check_resolution, make_pin, render, safe_requirement
from sandbox_agent.deps.target import RUNNER_OWN_PACKAGES, Target
from sandbox_agent.deps.uvcmd import run_uv
from sandbox_agent.errors import DependencyError

RESOLVE_TIMEOUT_S = 300.0
PYLOCK_MAJOR = "1"
"""PEP 751: a tool must refuse a lock whose major version it does not know."""
RESOLVER_VERSION = 2
"""Bump when the resolution text changes shape: every recorded resolution is then redone.
2: every line in the normal form of ``pins`` (SR-12)."""


class Resolution(BaseModel):
    """Pinned requirements with hashes, for one target."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str
    """``name==version [; marker] --hash=sha256:... ...``, one package a line, sorted."""
    source: str
    """``resolved`` (uv pip compile), ``pylock.toml`` or ``uv.lock``."""
    target: Target

    @field_validator("text")
    @classmethod
    def _only_pins(cls, text: str) -> str:
        try:
            check_resolution(text, "the resolution")
        except DependencyError as error:  # a stored one is then redone, never installed
            raise ValueError(str(error)) from None
        return text

    def sha256(self) -> str:
        """The environment's identity: the same resolution for the same target is the
        same environment."""
        payload = f"{RESOLVER_VERSION}\n{self.target.model_dump_json()}\n{self.text}"
        return hashlib.sha256(payload.encode()).hexdigest()


def resolution_key(declaration: Declaration, target: Target, index_url: str) -> str:
    """Names the recorded resolution of ``declaration`` (its content, not its files)."""
    payload = f"{RESOLVER_VERSION}\n{declaration.key()}\n{target.model_dump_json()}\n{index_url}"
    return hashlib.sha256(payload.encode()).hexdigest()


def parse_pinned(text: str) -> dict[str, Pin]:
    """uv's pinned output (``uv pip compile --generate-hashes``): canonical name -> pin.

    Raises:
        DependencyError: ``declaration``: a line that is not a package by name.
    """
    pins: dict[str, Pin] = {}
    for line in text.replace("\\\n", " ").splitlines():
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        name, _, version = words[0].partition("==")
        hashes = [w.removeprefix("--hash=sha256:") for w in words if w.startswith("--hash=")]
        if any(not w.startswith("--hash=") for w in words[1:]):
            raise DependencyError("declaration", f"uv pip compile wrote {line[:80]!r}")
        pin = make_pin(name, version, hashes, where="uv pip compile")
        pins[pin.name] = pin
    return pins


def _requirement_lines(lines: tuple[str, ...], where: str) -> list[str]:
    checked = []
    for line in lines:
        try:
            requirement = Requirement(line)
        except InvalidRequirement:  # a marker whose decoded text no longer parses
            raise DependencyError(
                "declaration", f"{where}: {line[:80]!r} is not one requirement"
            ) from None
        if canonicalize_name(requirement.name) not in RUNNER_OWN_PACKAGES:
            checked.append(safe_requirement(requirement, where))
    return checked


def _compile(
    declaration: Declaration, target: Target, index_url: str, scratch: Path, deadline: Deadline
) -> str:
    requirements = scratch / "requirements.in"
    where = ", ".join(declaration.sources) or "the declarations"
    # The runner's own packages are the image's: not declared here, so that their own
    # dependencies are not installed for nothing (a plugin that needs them still pulls
    # them in, and --no-emit-package keeps them out of the environment).
    wanted = _requirement_lines(declaration.requirements, where)
    constraints = _requirement_lines(declaration.constraints, where)
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
    if constraints:
        (scratch / "constraints.txt").write_text("".join(f"{line}\n" for line in constraints))
        args += ["--constraint", str(scratch / "constraints.txt")]
    done = run_uv(args, timeout_s=deadline.left(RESOLVE_TIMEOUT_S), cwd=scratch)
    if done.returncode != 0:
        raise classify(done.stderr, index_url=index_url, platform=target.platform)
    pins = parse_pinned(done.stdout)
    for name, line_where, allowed in declaration.pinned_hashes:
        if name not in pins:
            continue
        pin = pins[name]
        kept = tuple(sorted(set(pin.hashes) & set(allowed)))
        if not kept:
            raise DependencyError(
                "hash",
                f"{line_where}: {pin.name}=={pin.version} from the index matches none of its "
                "--hash values",
            )
        pins[name] = pin._replace(hashes=kept)
    return render(list(pins.values()))


def _pylock(repo: Path) -> str:
    try:
        data: dict[str, Any] = tomllib.loads((repo / PYLOCK).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as error:  # digit limits are ValueErrors too
        raise DependencyError("declaration", f"pylock.toml cannot be read: {error}") from None
    version = data.get("lock-version")
    if not isinstance(version, str) or version.split(".", 1)[0] != PYLOCK_MAJOR:
        raise DependencyError(
            "declaration", f"pylock.toml: lock-version {version!r} is not {PYLOCK_MAJOR}.x"
        )
    packages = data.get("packages")
    if not isinstance(packages, list):
        raise DependencyError("declaration", "pylock.toml has no [[packages]]")
    pins = []
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
                "declaration", f"pylock.toml: {name!r} comes from a path, URL or VCS, not an index"
            )
        files = [*(package.get("wheels") or []), package.get("sdist") or {}]
        hashes = [
            f["hashes"]["sha256"]
            for f in files
            if isinstance(f, dict) and isinstance(f.get("hashes"), dict) and "sha256" in f["hashes"]
        ]
        pins.append(
            make_pin(
                name, package.get("version"), hashes, where=PYLOCK, marker=package.get("marker")
            )
        )
    return render(pins)


def resolve(
    repo: Path,
    declaration: Declaration,
    target: Target,
    index_url: str,
    *,
    scratch: Path,
    deadline: Deadline,
) -> Resolution:
    """Pin every package of ``declaration`` for ``target``.

    Args:
        scratch: a private, empty folder for uv's input files (never a shared one).

    Raises:
        DependencyError: no wheel for the target, a conflict, a package or version not on
            the index, hashes that do not match, an index that cannot be reached, a lock
            or a line that is not plain data (``declaration``), out of time (``timeout``).
    """
    if declaration.lock is None:
        text = _compile(declaration, target, index_url, scratch, deadline)
        return Resolution(text=text, source="resolved", target=target)
    if declaration.lock.kind == "pylock.toml":
        return Resolution(text=_pylock(repo), source=PYLOCK, target=target)
    from sandbox_agent.deps.uvlock import read_uv_lock

    pins = read_uv_lock(repo, declaration.lock, target)
    return Resolution(text=render(pins), source=UV_LOCK, target=target)
