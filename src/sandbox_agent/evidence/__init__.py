"""Tamper-evident run evidence: a signed record per run, and its verification.

``seal_run`` is called by the controller at the end of every run; ``verify_run`` (and
``sandbox-agent verify``) checks the trace's hash chain, the signature, the result, the
diff and the original repository's hash.
"""

from __future__ import annotations

from sandbox_agent.evidence.chain import BadEvent
from sandbox_agent.evidence.keys import load_or_create_signing_key, load_public_key
from sandbox_agent.evidence.seal import EVIDENCE_FILE, REQUIRED_RECORD_FIELDS, seal_run
from sandbox_agent.evidence.verify import VerifyCheck, VerifyReport, verify_run

__all__ = [
    "EVIDENCE_FILE",
    "REQUIRED_RECORD_FIELDS",
    "BadEvent",
    "VerifyCheck",
    "VerifyReport",
    "load_or_create_signing_key",
    "load_public_key",
    "seal_run",
    "verify_run",
]
