"""One call: the dependency environment of a repository, made or found (issue 17).

``prepare_environment(repo, options)`` reads what the repository declares, finds the
recorded resolution (or resolves and records it), then finds the environment made
from it (or makes it). The second time for the same declarations it reads a few
files and a stat walk: no uv, no network. ``None`` when the repository declares
nothing (or only the runner's own pytest): the sandbox then gets no extra mount.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

from sandbox_agent.deps.models import DepsOptions, Environment

DECLARATION_FILES = ("pyproject.toml", "setup.cfg", "pylock.toml", "uv.lock")
"""With none of these and no ``requirements*.txt``, nothing is declared: no module that
parses declarations is even imported (a run without dependencies pays nothing)."""


def _declares_anything(repo: Path) -> bool:
    return any((repo / name).is_file() for name in DECLARATION_FILES) or any(
        repo.glob("requirements*.txt")
    )


def recorded_resolution(repo: Path, options: DepsOptions | None = None) -> str | None:
    """The resolution recorded for what ``repo`` declares (its pinned text), or None.

    Raises:
        DependencyError: ``declaration``: the declarations cannot be read.
    """
    from sandbox_agent.deps import store
    from sandbox_agent.deps.declared import read_declaration
    from sandbox_agent.deps.resolve import resolution_key
    from sandbox_agent.deps.target import runner_target

    options = options or DepsOptions()
    key = resolution_key(read_declaration(repo), runner_target(), options.index_url)
    resolution = store.load_resolution(key)
    return None if resolution is None else resolution.text


def pin_resolution(repo: Path, text: str, options: DepsOptions | None = None) -> None:
    """Record ``text`` as the resolution of what ``repo`` declares, in place of any: an
    evaluation suite pins its projects' environments this way, so they do not move with
    new releases (the pins' hashes are checked as always when it is made).

    Raises:
        DependencyError: ``declaration``: the declarations cannot be read, ``repo`` is
            a lock (its own pins are the resolution), or ``text`` is not pins alone.
    """
    from sandbox_agent.deps import store
    from sandbox_agent.deps.declared import read_declaration
    from sandbox_agent.deps.pins import check_resolution
    from sandbox_agent.deps.resolve import Resolution, resolution_key
    from sandbox_agent.deps.target import runner_target
    from sandbox_agent.errors import DependencyError

    check_resolution(text, f"the pinned resolution of {repo.name}")
    options = options or DepsOptions()
    declaration = read_declaration(repo)
    if declaration.lock is not None:
        raise DependencyError("declaration", f"{repo}: a lock is its own resolution")
    target = runner_target()
    key = resolution_key(declaration, target, options.index_url)
    store.save_resolution(key, Resolution(text=text, source="resolved", target=target))


def prepare_environment(
    repo: Path, options: DepsOptions | None = None, *, deadline: float | None = None
) -> Environment | None:
    """The environment ``repo`` declares, made or found; None when it declares nothing.

    Args:
        deadline: a ``time.monotonic()`` point (the run's wall clock): the phase ends by
            then or after ``options.timeout_s``, whichever is sooner.

    Raises:
        DependencyError: one line saying what cannot be made and why (a declaration we
            do not read, no wheel for the target, a conflict, over the size limit, an
            index that cannot be reached, out of time).
    """
    options = options or DepsOptions()
    if options.mode == "off" or not _declares_anything(repo):
        return None
    from sandbox_agent.deps import build, store
    from sandbox_agent.deps.deadline import Deadline
    from sandbox_agent.deps.declared import read_declaration
    from sandbox_agent.deps.manifest import MANIFEST
    from sandbox_agent.deps.resolve import resolution_key, resolve
    from sandbox_agent.deps.target import runner_target

    started = time.monotonic()
    clock = Deadline.within(options.timeout_s, also=deadline)
    declaration = read_declaration(repo)
    if declaration.empty:
        return None
    target = runner_target()
    key = resolution_key(declaration, target, options.index_url)
    resolution = store.load_resolution(key)
    resolved = resolution is None
    if resolution is None:
        with store.scratch() as scratch:
            resolution = resolve(
                repo, declaration, target, options.index_url, scratch=scratch, deadline=clock
            )
    if not resolution.text.strip():
        if resolved:
            store.save_resolution(key, resolution)
        return None
    root = store.envs_dir() / resolution.sha256()
    manifest = build.load(root, resolution.sha256())
    made = manifest is None
    if manifest is None:
        store.remove_tree(root)  # damaged or partial under its name: made again
        root = build.make(
            resolution, index_url=options.index_url, max_bytes=options.max_bytes, deadline=clock
        )
        manifest = build.load(root, resolution.sha256())
        if manifest is None:
            raise RuntimeError(f"the environment made at {root} does not check")  # our bug
    if resolved:  # recorded once it has made an environment: a failure records nothing (R5)
        store.save_resolution(key, resolution)
    return Environment(
        hash=manifest.hash,
        packages=manifest.packages,
        path=root,
        manifest_sha256=hashlib.sha256((root / MANIFEST).read_bytes()).hexdigest(),
        source=manifest.source,
        size_bytes=manifest.size_bytes,
        made=made,
        resolved=resolved,
        sources=declaration.sources,
        prepare_ms=round((time.monotonic() - started) * 1000, 1),
    )
