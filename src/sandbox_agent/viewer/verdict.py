"""A run's seal and chain, as ``sandbox-agent verify`` judges them, for the page.

``view`` copies the run's files (read through ``Folder``, so never through a link) into
a private scratch folder and verifies that copy: ``verify_run`` itself then opens
nothing in the served folder, and the original repository named in the sealed record is
not re-hashed (a hostile record could name any folder). ``serve`` verifies its own run
folders in place, the original included.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from sandbox_agent.errors import UsageError
from sandbox_agent.evidence import VerifyCheck, VerifyReport, verify_run
from sandbox_agent.viewer.folder import RUN_FILES, Folder, key_of


def run_dir_verdict(
    run_dir: Path, *, public_key: Ed25519PublicKey | None = None, rehash_source: bool = True
) -> VerifyReport:
    """``verify``'s report on a run folder the caller made itself (the service's).

    Never raises: an unreadable key is a failed check.
    """
    try:
        return verify_run(run_dir, public_key=public_key, rehash_source=rehash_source)
    except UsageError as error:
        return _refused(str(run_dir), str(error))


def folder_verdict(
    folder: Folder, parts: tuple[str, ...], public_key: Ed25519PublicKey | None
) -> VerifyReport:
    """``verify``'s report on a copy of the run folder ``parts`` of ``folder``.

    Never raises: a file that cannot be read safely is left out of the copy (so the check
    that needs it fails) and named in the ``evidence`` check's detail.
    """
    key = key_of(parts)
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="sandbox-agent-view-") as scratch:
        copy = Path(scratch)
        for name in RUN_FILES:
            try:
                data = folder.read(parts, name)
            except UsageError as error:
                problems.append(str(error))
                continue
            if data is not None:
                (copy / name).write_bytes(data)
        try:
            report = verify_run(copy, public_key=public_key, rehash_source=False)
        except UsageError as error:
            return _refused(key, str(error))
    checks = [
        VerifyCheck(name=check.name, ok=check.ok, detail=check.detail.replace(scratch, key))
        for check in report.checks
    ]
    if problems:
        checks.insert(0, VerifyCheck(name="files", ok=False, detail="; ".join(problems)))
    return report.model_copy(
        update={"run_dir": key, "checks": checks, "ok": report.ok and not problems}
    )


def _refused(run_dir: str, why: str) -> VerifyReport:
    check = VerifyCheck(name="signature", ok=False, detail=why)
    return VerifyReport(run_dir=run_dir, ok=False, checks=[check])
