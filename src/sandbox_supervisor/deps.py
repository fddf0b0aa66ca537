"""The repository's dependency environment inside the sandbox (issue 17).

The host mounts one read-only folder at ``DEPS_ROOT`` when the repository declares
dependencies: ``manifest.json`` (what it holds, hashed; its sha256 is pinned in the
spec and checked by PID 1's attestation) and ``site/`` (the unpacked wheels). Without
an environment, ``DEPS_ROOT`` is the image's own empty folder.

Nothing of it is on any path while PID 1 starts, attests, waits for the go, or while
the trusted runner, the judge or the candidate import their own modules: ``site/``
goes on ``sys.path`` only in ``add_to_path``, called when the repository goes there
too (the workload starts). It goes in as a plain entry, after the standard library
and before the image's ``dist-packages``: ``site.addsitedir`` is never called, so no
``.pth`` file in it is ever processed, and the standard library cannot be shadowed by
it (nor can ``sandbox_supervisor``, which lives in the standard library's folder).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType

DEPS_ROOT = "/deps"
SITE_DIR = DEPS_ROOT + "/site"
MANIFEST_FILE = DEPS_ROOT + "/manifest.json"
ROOT_ENTRIES = ("manifest.json", "site")
"""Exactly what a mounted environment holds at its top."""
RUNNER_OWN = frozenset({"pytest", "_pytest", "pluggy", "unittest", "sandbox_supervisor"})
"""Modules the runner itself runs on: an environment never replaces them, imported or not."""
_THIRD_PARTY_DIRS = ("/dist-packages/", "/site-packages/")


def provided_names(site_dir: str = SITE_DIR) -> frozenset[str]:
    """Top-level module names ``site_dir`` provides (packages, modules, extensions)."""
    names = set()
    for entry in os.listdir(site_dir):
        if entry.endswith((".dist-info", ".data")) or entry.startswith("."):
            continue
        names.add(entry.partition(".")[0])
    return frozenset(names)


def add_to_path(path: list[str], modules: dict[str, ModuleType], site_dir: str = SITE_DIR) -> bool:
    """Put ``site_dir`` on ``path`` (``sys.path``) when an environment is mounted.

    It goes before the first ``dist-packages``/``site-packages`` entry, so the
    environment's versions win over the image's and the standard library wins over
    both. Modules the runner already imported from the image's ``dist-packages``
    (pytest imports ``attr``, ``iniconfig``, ``py``) and that the environment also
    provides are dropped from ``modules``, so the code under test imports the
    environment's version; pytest keeps the references it holds. The runner's own
    (``RUNNER_OWN``) and the standard library's are never dropped.

    Returns:
        Whether an environment was found and added.
    """
    if not os.path.isdir(site_dir):
        return False
    index = next(
        (i for i, entry in enumerate(path) if entry.endswith(("dist-packages", "site-packages"))),
        len(path),
    )
    path.insert(index, site_dir)
    provided = provided_names(site_dir) - RUNNER_OWN
    for name in list(modules):
        top = name.partition(".")[0]
        if top in provided and _third_party(modules[name]):
            del modules[name]
    return True


def _third_party(module: ModuleType | None) -> bool:
    where = getattr(module, "__file__", None) or ""
    return isinstance(where, str) and any(part in where for part in _THIRD_PARTY_DIRS)


def manifest_sha256(path: str = MANIFEST_FILE) -> str:
    """sha256 of the manifest file, hex (``_sha256`` is built in: no ``hashlib`` set-up).

    Raises:
        OSError: the file cannot be read.
    """
    try:
        from _sha256 import sha256  # type: ignore[import-not-found]
    except ImportError:  # an interpreter built without it
        from hashlib import sha256
    digest = sha256()
    with open(path, "rb") as file:
        while chunk := file.read(1 << 16):
            digest.update(chunk)
    return str(digest.hexdigest())
