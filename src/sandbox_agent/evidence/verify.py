"""Verifying a sealed run: anyone holding the signer's public key can check every claim.

Checks, each reported on its own: ``evidence`` (the file and its shape), ``signature``
(Ed25519, by a trusted key), ``trace_chain`` (line by line), ``trace_head`` (the last
line is the one that was sealed), ``result`` (``result.json`` is the sealed result),
``diff`` (``diff.patch`` is the sealed diff) and ``fixture`` (the original repository
still hashes to what the run established).
"""

from __future__ import annotations

import base64
import binascii
import json
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from pydantic import BaseModel, ConfigDict

from sandbox_agent.canonical import canonical_json
from sandbox_agent.evidence.chain import (
    TRACE_FILE,
    BadEvent,
    read_bounded,
    sha256_hex,
    walk_chain,
)
from sandbox_agent.evidence.keys import fingerprint, load_public_key, public_key_path
from sandbox_agent.evidence.seal import (
    EVIDENCE_FILE,
    EVIDENCE_SCHEMA,
    REQUIRED_RECORD_FIELDS,
    signed_payload,
)

RESULT_FILE = "result.json"
DIFF_FILE = "diff.patch"
SOURCE_MISSING = "source not available"
SOURCE_NOT_REHASHED = "the original was not re-hashed ('sandbox-agent verify RUN_DIR' does)"
CHECK_NAMES = ("evidence", "signature", "trace_chain", "trace_head", "result", "diff", "fixture")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    if len(keys) != len(set(keys)):
        # First-wins and last-wins readers would see two different documents.
        raise ValueError("a key appears twice in one object")
    return dict(pairs)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def strict_json(data: bytes) -> Any:
    """Parse JSON that means one thing to every reader: no duplicate keys, no NaN/Infinity.

    Raises:
        ValueError: the bytes are not such JSON (nested past the parser's depth included).
    """
    try:
        return json.loads(data, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except RecursionError:  # SR-11 R3: was a traceback in verify and eval --resume
        raise ValueError("nested too deep") from None


class VerifyCheck(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    ok: bool
    detail: str


class VerifyReport(BaseModel):
    """Every check of one run's evidence; ``ok`` only when all of them hold."""

    model_config = ConfigDict(extra="forbid")

    run_dir: str
    ok: bool
    checks: list[VerifyCheck]
    first_bad_event: BadEvent | None = None
    """The first trace event that does not verify (also set when only the head differs)."""
    signer: str | None = None
    """Fingerprint of the key the evidence names."""

    def check(self, name: str) -> VerifyCheck:
        """The check called ``name``.

        Raises:
            KeyError: there is no such check.
        """
        for item in self.checks:
            if item.name == name:
                return item
        raise KeyError(name)

    def failed(self) -> list[str]:
        """Names of the checks that do not hold."""
        return [item.name for item in self.checks if not item.ok]


class _Checks:
    def __init__(self) -> None:
        self.items: list[VerifyCheck] = []

    def add(self, name: str, ok: bool, detail: str) -> bool:
        self.items.append(VerifyCheck(name=name, ok=ok, detail=detail))
        return ok


def _load_evidence(run_dir: Path) -> tuple[dict[str, Any] | None, str]:
    path = run_dir / EVIDENCE_FILE
    try:
        document = strict_json(read_bounded(path))
    except FileNotFoundError:
        return None, f"{EVIDENCE_FILE} is missing: the run was never sealed"
    except (OSError, ValueError) as error:
        return None, f"{EVIDENCE_FILE} is not readable JSON ({error})"
    if not isinstance(document, dict) or document.get("schema") != EVIDENCE_SCHEMA:
        return None, f"{EVIDENCE_FILE} is not a {EVIDENCE_SCHEMA} document"
    record = document.get("record")
    if not isinstance(record, dict) or not isinstance(record.get("result"), dict):
        return None, f"{EVIDENCE_FILE} holds no record with a result"
    missing = [name for name in REQUIRED_RECORD_FIELDS if name not in record]
    if missing:
        return None, f"the record lacks {', '.join(missing)}"
    return document, f"{EVIDENCE_SCHEMA}, created {document.get('created')}"


def _trusted_key(public_key: Ed25519PublicKey | None) -> tuple[Ed25519PublicKey | None, str]:
    if public_key is not None:
        return public_key, "the given key"
    local = public_key_path()
    if local.exists():
        return load_public_key(local), f"this host's key ({local})"
    return None, "no trusted key"


def _check_signature(
    document: dict[str, Any], public_key: Ed25519PublicKey | None
) -> tuple[bool, str]:
    trusted, origin = _trusted_key(public_key)
    if trusted is None:
        return False, "no trusted public key here: pass --public-key (the signer's signing-key.pub)"
    named = (document.get("signer") or {}).get("fingerprint")
    if named != fingerprint(trusted):
        return False, f"signed by {named}, not by {origin} {fingerprint(trusted)}"
    try:
        signature = base64.b64decode(str(document.get("signature", "")), validate=True)
        trusted.verify(signature, signed_payload(document))
    except (InvalidSignature, binascii.Error, ValueError):
        return False, "the signature does not match the record: the evidence was changed"
    return True, f"Ed25519 by {named} ({origin})"


def _check_chain(run_dir: Path, record: dict[str, Any] | None, checks: _Checks) -> BadEvent | None:
    run_id = record["result"].get("run_id") if record else None
    walk = walk_chain(run_dir / TRACE_FILE, run_id=run_id if isinstance(run_id, str) else None)
    if walk.first_bad is not None:
        bad = walk.first_bad
        seq = f" (seq {bad.seq})" if bad.seq is not None else ""
        checks.add("trace_chain", False, f"line {bad.line}{seq}: {bad.reason}")
    else:
        checks.add("trace_chain", True, f"{walk.events} events chained")
    if record is None:
        checks.add("trace_head", False, "no sealed record to compare the head with")
        return walk.first_bad
    sealed = record.get("trace_head_sha256")
    if walk.head_sha256 is not None and walk.head_sha256 == sealed:
        checks.add("trace_head", True, f"last line hashes to the sealed head {sealed[:16]}...")
        return walk.first_bad
    checks.add("trace_head", False, f"the last line hashes to {walk.head_sha256}, sealed {sealed}")
    if walk.first_bad is None:
        last = walk.events
        return BadEvent(
            line=last,
            seq=last - 1,
            reason="its hash differs from the sealed trace head: the last line was changed, "
            "or lines were removed from or added at the end",
        )
    return walk.first_bad


def _check_result(run_dir: Path, record: dict[str, Any], checks: _Checks) -> None:
    try:
        result = strict_json(read_bounded(run_dir / RESULT_FILE))
    except (OSError, ValueError) as error:
        checks.add("result", False, f"{RESULT_FILE} is missing or not JSON ({error})")
        return
    # Compared as canonical JSON, not with Python's ==, for which 1, 1.0 and true are equal.
    if not isinstance(result, dict) or canonical_json(result) != canonical_json(record["result"]):
        if not isinstance(result, dict):
            result = {}
        differing = sorted(
            key
            for key in set(result) | set(record["result"])
            if canonical_json(result.get(key)) != canonical_json(record["result"].get(key))
        )
        checks.add("result", False, f"{RESULT_FILE} differs from the sealed result in {differing}")
        return
    checks.add("result", True, f"status {result.get('status')}, equal to the sealed result")


def _check_diff(run_dir: Path, record: dict[str, Any], checks: _Checks) -> None:
    try:
        actual = sha256_hex(read_bounded(run_dir / DIFF_FILE))
    except OSError as error:
        checks.add("diff", False, f"{DIFF_FILE} cannot be read ({error.strerror})")
        return
    if actual != record["diff_sha256"]:
        checks.add("diff", False, f"{DIFF_FILE} hashes to {actual}, sealed {record['diff_sha256']}")
        return
    checks.add("diff", True, f"sha256 {actual[:16]}... as sealed")


def _check_fixture(
    record: dict[str, Any], allow_missing_source: bool, rehash_source: bool, checks: _Checks
) -> None:
    before, after = record["fixture_sha256_before"], record["fixture_sha256_after"]
    claimed = record["result"].get("fixture") or {}
    if (claimed.get("sha256_before"), claimed.get("sha256_after")) != (before, after):
        checks.add("fixture", False, "the result's fixture hashes differ from the sealed ones")
        return
    if claimed.get("intact") != (before == after):
        checks.add("fixture", False, f"the result claims intact={claimed.get('intact')}")
        return
    if not rehash_source:
        detail = f"sealed hashes agree with the result; {SOURCE_NOT_REHASHED}"
        checks.add("fixture", True, detail)
        return
    source = Path(str(record["source_path"]))
    if not source.is_dir():
        detail = f"{SOURCE_MISSING}: {source}"
        checks.add("fixture", allow_missing_source, detail + " (not re-hashed)")
        return
    from sandbox_agent.errors import WorkspaceError
    from sandbox_agent.workspace import WorkspaceLimits
    from sandbox_agent.workspace.workspace import source_sha256

    try:
        now = source_sha256(source, WorkspaceLimits())  # bounded like the run's (SR-8 C8-5)
    except WorkspaceError as error:
        checks.add("fixture", False, f"cannot re-hash {source}: {error}")
        return
    if now != after:
        checks.add("fixture", False, f"{source} now hashes to {now}, sealed after-run {after}")
        return
    checks.add("fixture", True, f"{source} still hashes to {after[:16]}...")


def verify_run(
    run_dir: Path,
    *,
    public_key: Ed25519PublicKey | None = None,
    allow_missing_source: bool = False,
    rehash_source: bool = True,
) -> VerifyReport:
    """Check a run's sealed evidence against its folder and its original repository.

    Never raises for what it finds: every problem is a failed check in the report.

    Args:
        run_dir: the run's folder (``trace.jsonl``, ``result.json``, ``diff.patch``,
            ``evidence.json``).
        public_key: the signer's public key; this host's ``signing-key.pub`` when None
            (the signature check fails when there is neither).
        allow_missing_source: pass the fixture check when the original repository is no
            longer on this machine (the sealed hashes are still compared with the result).
        rehash_source: False to leave the original alone (the sealed hashes are still
            compared with the result): the run viewer reads nothing outside the folder it
            serves, and a hostile record could name any folder as its source.

    Raises:
        UsageError: this host's public key file exists but cannot be read.
    """
    checks = _Checks()
    document, detail = _load_evidence(run_dir)
    checks.add("evidence", document is not None, detail)
    record: dict[str, Any] | None = document["record"] if document else None
    signer: str | None = None
    if document is not None:
        signer = (document.get("signer") or {}).get("fingerprint")
        checks.add("signature", *_check_signature(document, public_key))
    else:
        checks.add("signature", False, "nothing to check")
    first_bad = _check_chain(run_dir, record, checks)
    if record is not None:
        _check_result(run_dir, record, checks)
        _check_diff(run_dir, record, checks)
        _check_fixture(record, allow_missing_source, rehash_source, checks)
    else:
        for name in ("result", "diff", "fixture"):
            checks.add(name, False, "no sealed record to compare with")
    return VerifyReport(
        run_dir=str(run_dir),
        ok=all(item.ok for item in checks.items),
        checks=checks.items,
        first_bad_event=first_bad,
        signer=signer,
    )
