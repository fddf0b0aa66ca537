"""``apply_patch``: validate every edit first, then write them all or none."""

from __future__ import annotations

from sandbox_agent import denials
from sandbox_agent.errors import ToolDenied
from sandbox_agent.policy import Policy
from sandbox_agent.tools.contracts import ApplyPatchArgs
from sandbox_agent.tools.files import ToolResult, decode_text
from sandbox_agent.tools.limits import ToolLimits
from sandbox_agent.workspace.paths import split_path
from sandbox_agent.workspace.safefs import PlannedWrite, SafeFS


def plan_patch(
    fs: SafeFS, policy: Policy, args: ApplyPatchArgs, limits: ToolLimits
) -> list[PlannedWrite]:
    """The writes ``args`` amounts to, one per file, after checking every edit.

    Edits to the same file apply in order. Nothing is written here.

    Raises:
        ToolDenied: a ``path.*`` or ``patch.*`` code for the first bad edit.
    """
    originals: dict[str, bytes | None] = {}
    current: dict[str, str] = {}
    parts_of: dict[str, tuple[str, ...]] = {}
    for index, edit in enumerate(args.edits, start=1):
        parts = split_path(edit.path)
        path = "/".join(parts)
        where = f"edit {index} ('{path}')"
        reason = policy.protected_reason(path)
        if reason is not None:
            raise ToolDenied(denials.PATH_PROTECTED, f"{where}: the path is protected ({reason})")
        if edit.old and edit.old == edit.new:
            raise ToolDenied(
                denials.PATCH_NOOP,
                f"{where}: 'old' and 'new' are the same, so the edit changes nothing; "
                "put the corrected text in 'new'",
            )
        if edit.old == "":
            if path in current or fs.file_exists(path):
                raise ToolDenied(
                    denials.PATCH_EXISTS, f"{where}: the file exists; give 'old' text to replace"
                )
            originals[path] = None
            text = edit.new
        else:
            if path not in current:
                content = fs.read_bytes(path, limits.max_patch_file_bytes)
                originals[path] = content
                current[path] = decode_text(content, path)
            count = current[path].count(edit.old)
            if count == 0:
                raise ToolDenied(
                    denials.PATCH_NOT_FOUND, f"{where}: 'old' does not occur; read the file again"
                )
            if count > 1:
                raise ToolDenied(
                    denials.PATCH_NOT_UNIQUE,
                    f"{where}: 'old' occurs {count} times; include more context so it occurs once",
                )
            text = current[path].replace(edit.old, edit.new, 1)
        if len(text.encode("utf-8")) > limits.max_patch_file_bytes:
            raise ToolDenied(
                denials.PATCH_TOO_LARGE,
                f"{where}: the file would exceed {limits.max_patch_file_bytes} bytes",
            )
        current[path] = text
        parts_of[path] = parts
    writes = [
        PlannedWrite(path, parts_of[path], originals[path], current[path].encode("utf-8"))
        for path in current
    ]
    total = sum(len(write.new) for write in writes)
    if total > limits.max_patch_total_bytes:
        raise ToolDenied(
            denials.PATCH_TOO_LARGE,
            f"the patch writes {total} bytes, over {limits.max_patch_total_bytes}; split it",
        )
    return writes


def apply_patch(fs: SafeFS, policy: Policy, args: ApplyPatchArgs, limits: ToolLimits) -> ToolResult:
    """Check every edit, then apply them all or none.

    Raises:
        ToolDenied: a ``path.*`` or ``patch.*`` code; nothing was changed.
    """
    writes = plan_patch(fs, policy, args, limits)
    fs.commit(writes)
    files = [write.path for write in writes]
    created = [write.path for write in writes if write.old is None]
    message = f"applied {_count(len(args.edits), 'edit')} to {_count(len(files), 'file')}"
    return message, {"files": files, "created": created, "edits": len(args.edits)}


def _count(number: int, noun: str) -> str:
    """``1 edit``, ``2 edits``: what run's table and the model read."""
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"
