"""Dependency environments: what a repository declares, made read-only for the sandbox
(issue 17; docs/DEPENDENCIES.md).

Modules, in the order a run uses them::

    declared      what the repository declares (pyproject, setup.cfg, requirements, locks)
    requirements  requirements files, read as data
    target        the runner image's interpreter and platform
    resolve       declaration -> pinned resolution with hashes (uv pip compile / export)
    build         resolution -> read-only folder (uv pip install --target, manifest)
    manifest      the manifest: every file hashed; its sha256 is pinned in the spec
    store         where resolutions and environments live; whole or not at all
    failures      uv's errors -> one-line DependencyErrors
    models        the contracts (options, the environment, a package): light
    environment   prepare_environment(): all of it, cached
"""

from sandbox_agent.deps.environment import prepare_environment
from sandbox_agent.deps.models import DEFAULT_INDEX_URL, DEFAULT_MAX_BYTES, DepsOptions, Environment

__all__ = [
    "DEFAULT_INDEX_URL",
    "DEFAULT_MAX_BYTES",
    "DepsOptions",
    "Environment",
    "prepare_environment",
]
