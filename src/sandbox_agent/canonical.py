"""Canonical JSON: the one encoding the host hashes, signs and compares (issue 31).

Sorted keys, no spaces, ASCII only, and no NaN or infinity (they are not JSON): one value
has one encoding, so its sha256 names it and a signature over it means one thing. Every
host use calls this function: the sandbox spec's digest and PID 1's config, the
dependency manifest, the sealed evidence and its verification.

The in-container package keeps its own copy, stdlib only and without ``json``
(``sandbox_supervisor.protocol.canonical_json``: PID 1 imports nothing of the host);
``tests/test_canonical.py`` keeps the two equal on a set of values.
"""

from __future__ import annotations

import json
from typing import Any


def canonical_json(value: Any) -> bytes:
    """``value`` (plain JSON data) in its one encoding, as bytes.

    Raises:
        TypeError: a value JSON cannot hold.
        ValueError: NaN or an infinity, or a circular reference.
    """
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    ).encode()
