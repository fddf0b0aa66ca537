"""Sealing a run: the signed record that ``sandbox-agent verify`` checks later.

``RUN_DIR/evidence.json`` holds the controller's record (result, fixture hashes, diff
hash, image ID, spec, attestation and exit-report digests, trace head hash, source path),
the schema, the time, the signer's public key, and an Ed25519 signature over the
canonical JSON of all of that (every key but ``signature``).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
import secrets
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from sandbox_agent.canonical import canonical_json
from sandbox_agent.errors import EvidenceError
from sandbox_agent.evidence.keys import fingerprint, load_or_create_signing_key, public_key_bytes

EVIDENCE_FILE = "evidence.json"
EVIDENCE_SCHEMA = "sandbox-agent.evidence/1"
SIGNATURE_ALGORITHM = "ed25519"
REQUIRED_RECORD_FIELDS: tuple[str, ...] = (
    "result",
    "fixture_sha256_before",
    "fixture_sha256_after",
    "diff_sha256",
    "image_id",
    "spec_sha256s",
    "attestation_sha256s",
    "exit_report_sha256s",
    "trace_head_sha256",
    "source_path",
)
"""What the controller's record must hold; extra fields are kept and signed too."""


def _plain(value: Any) -> Any:
    """``value`` as plain JSON data (paths become strings), so what is signed is what is stored."""

    def encode(item: Any) -> Any:
        if isinstance(item, Path):
            return str(item)
        raise TypeError(f"{type(item).__name__} is not JSON data")

    try:
        return json.loads(json.dumps(value, default=encode, allow_nan=False))
    except (TypeError, ValueError) as error:
        raise EvidenceError(f"the evidence record is not plain JSON data: {error}") from error


def signed_payload(document: dict[str, Any]) -> bytes:
    """The bytes an evidence document's signature covers: every key but ``signature``."""
    return canonical_json({key: value for key, value in document.items() if key != "signature"})


def build_evidence(
    record: dict[str, Any], key: Ed25519PrivateKey, *, created: str | None = None
) -> dict[str, Any]:
    """The signed evidence document for ``record``.

    Raises:
        EvidenceError: the record lacks a required field or is not plain JSON data.
    """
    missing = [name for name in REQUIRED_RECORD_FIELDS if name not in record]
    if missing:
        raise EvidenceError(f"the evidence record lacks {', '.join(missing)}")
    public = key.public_key()
    document: dict[str, Any] = {
        "schema": EVIDENCE_SCHEMA,
        "created": created or dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds"),
        "signer": {
            "algorithm": SIGNATURE_ALGORITHM,
            "public_key": base64.b64encode(public_key_bytes(public)).decode(),
            "fingerprint": fingerprint(public),
        },
        "record": _plain(record),
    }
    document["signature"] = base64.b64encode(key.sign(signed_payload(document))).decode()
    return document


def seal_run(
    run_dir: Path, record: dict[str, Any], *, key: Ed25519PrivateKey | None = None
) -> None:
    """Sign ``record`` and write it to ``RUN_DIR/evidence.json`` (atomically).

    Args:
        run_dir: the run's folder, holding ``trace.jsonl``, ``result.json``, ``diff.patch``.
        record: see ``REQUIRED_RECORD_FIELDS``.
        key: the signing key; this host's (generated at first use) when None.

    Raises:
        EvidenceError: the record is incomplete or not JSON data, or the file cannot be written.
        SetupError: the host's signing key is unsafe (looser mode, another owner) or unreadable.
    """
    document = build_evidence(record, key or load_or_create_signing_key())
    path = run_dir / EVIDENCE_FILE
    temporary = run_dir / f".{EVIDENCE_FILE}.{os.getpid()}.{secrets.token_hex(6)}.tmp"
    try:
        temporary.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n", "utf-8")
        os.replace(temporary, path)
    except OSError as error:
        raise EvidenceError(f"cannot write {path}: {error.strerror}") from error
