"""What crosses the network: folders as bounded tar bytes, out to a node and back.

A run's inputs go to a node as data, never as a path: a repository (a fixture or a
generated one) and any other folder the run needs, packed here (``copy_of``) and
unpacked in a private folder on the node (``place``). A node that holds the very same
tree at the very same path (one machine, or the project installed at one path
everywhere) runs it from there, so a run's evidence names the path the caller has and
``verify`` re-hashes it as after a local run. A run's folder (trace, result, diff,
evidence) comes back the same way (``pack_run_folder``, ``unpack_run_folder``).

Nothing secret is packed: real-model keys stay in each node's own environment
(docs/CLUSTER.md); what an evaluation case ships is ``evals.running.on_node``'s.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from sandbox_agent.errors import UsageError

MAX_PACKED_BYTES = 64 * 1024 * 1024
"""A folder larger than this is refused rather than shipped (a repository, a run folder)."""


def pack_folder(root: Path) -> bytes:
    """``root``'s tree as an uncompressed tar (regular files, folders and symlinks as
    they are, so the node's copy refuses what the local copy would refuse).

    Raises:
        UsageError: ``root`` is not a folder, or the tree is larger than ``MAX_PACKED_BYTES``.
    """
    if not root.is_dir():
        raise UsageError(f"{root} is not a folder")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for path in sorted(root.rglob("*")):
            archive.add(path, arcname=str(path.relative_to(root)), recursive=False)
            if buffer.tell() > MAX_PACKED_BYTES:
                raise UsageError(f"{root} is over {MAX_PACKED_BYTES} bytes: too large to ship")
    return buffer.getvalue()


def unpack_folder(data: bytes, dest: Path) -> Path:
    """Unpack a ``pack_folder`` tar into ``dest`` (created), refusing anything that would
    land outside it (tarfile's ``data`` filter: no absolute or escaping paths, links
    or devices)."""
    if len(data) > MAX_PACKED_BYTES:
        raise UsageError(f"a folder of {len(data)} bytes came: over {MAX_PACKED_BYTES}")
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as archive:
        # The sender bounds what it packs, but the receiver may not trust the sender: the
        # files' sizes are bounded here too, and a sparse member (which unpacks to more
        # than it takes in the tar) is refused.
        members = archive.getmembers()
        if any(member.issparse() for member in members):
            raise UsageError("a folder came with a sparse file: refused")
        if sum(member.size for member in members) > MAX_PACKED_BYTES:
            raise UsageError(f"a folder came whose files are over {MAX_PACKED_BYTES} bytes")
        dest.mkdir(parents=True, exist_ok=True)
        archive.extractall(dest, filter="data")
    return dest


class FolderCopy(BaseModel):
    """A folder as the caller has it: where, and what it hashes to."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: Path
    """The caller's path (used as is on a node that holds the identical tree there)."""
    sha256: str
    """``workspace.hashing.tree_sha256`` of the tree."""
    tar: bytes


def copy_of(path: Path) -> FolderCopy:
    """Pack ``path`` with its tree hash.

    Raises:
        UsageError: not a folder, or too large.
        WorkspaceError: a file could not be read.
    """
    from sandbox_agent.workspace.hashing import tree_sha256

    return FolderCopy(path=path, sha256=tree_sha256(path), tar=pack_folder(path))


def place(copy: FolderCopy, scratch: Path) -> Path:
    """The folder to use on this node: the caller's path when it holds the identical tree,
    otherwise the shipped bytes unpacked under ``scratch``."""
    from sandbox_agent.errors import WorkspaceError
    from sandbox_agent.workspace.hashing import tree_sha256

    try:
        if copy.path.is_dir() and tree_sha256(copy.path) == copy.sha256:
            return copy.path
    except WorkspaceError:
        pass
    return unpack_folder(copy.tar, scratch)


class RunFolder(BaseModel):
    """A finished run's folder (trace, result, diff, evidence) on its way back."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    """The folder's name: the run id."""
    tar: bytes


def pack_run_folder(trace_path: str) -> RunFolder | None:
    """The folder holding ``trace_path``, packed; None when the run left no trace."""
    if not trace_path:
        return None
    folder = Path(trace_path).parent
    if not folder.is_dir():
        return None
    return RunFolder(name=folder.name, tar=pack_folder(folder))


def unpack_run_folder(run: RunFolder, trace_dir: Path) -> Path:
    """Write a run's folder under ``trace_dir`` (as a local run would have) and return it.

    Raises:
        UsageError: the name is not one folder name, or another run's folder has it; the
            tar is over ``MAX_PACKED_BYTES`` or holds a sparse file.
    """
    if not run.name or "/" in run.name or run.name in (".", ".."):
        raise UsageError(f"a node sent back a run folder named {run.name!r}")
    if (trace_dir / run.name).exists():
        raise UsageError(f"a node sent back a run folder named {run.name!r}, which is taken")
    return unpack_folder(run.tar, trace_dir / run.name)
