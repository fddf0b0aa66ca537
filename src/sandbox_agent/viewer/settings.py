"""The viewer's limits: each a named default and a ``view`` flag."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

DEFAULT_PORT = 8100
"""``view``'s default port (``serve`` has 8000, so both can run at once)."""
DEFAULT_MAX_FILE_BYTES = 32 * 1024 * 1024
"""The largest file the viewer reads (a trace, a result, a report, a diff); a larger one
is reported in one line, never read."""
DEFAULT_MAX_EVENTS = 5000
"""Trace events shown per run; the rest are counted, not sent."""
DEFAULT_MAX_RUNS = 2000
"""Run folders listed; a scan stops there."""
DEFAULT_MAX_DEPTH = 4
"""Folder levels scanned below the given folder (``results/<time>/traces/<run>`` is 3)."""
DEFAULT_MAX_SCAN_ENTRIES = 100_000
"""Directory entries a scan looks at before it stops."""
HEAD_BYTES = 64 * 1024
"""What is read of a trace to list a run: its first event (``run_started``)."""


class ViewSettings(BaseModel):
    """What ``create_view_app`` serves, and within which limits."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    root: Path
    """The folder given to ``view``: a run folder, a results folder, or a folder of either.
    Nothing outside it is ever read or served."""
    host: str = "127.0.0.1"
    """The loopback address the viewer is bound to (requests naming another host: 421)."""
    public_key: Path | None = None
    """The signer's ``signing-key.pub`` for the seal check; this host's key when None."""
    max_file_bytes: int = Field(DEFAULT_MAX_FILE_BYTES, ge=1024)
    """See ``DEFAULT_MAX_FILE_BYTES``."""
    max_events: int = Field(DEFAULT_MAX_EVENTS, ge=1)
    """See ``DEFAULT_MAX_EVENTS``."""
    max_runs: int = Field(DEFAULT_MAX_RUNS, ge=1)
    """See ``DEFAULT_MAX_RUNS``."""
    max_depth: int = Field(DEFAULT_MAX_DEPTH, ge=0, le=16)
    """See ``DEFAULT_MAX_DEPTH``."""
    max_scan_entries: int = Field(DEFAULT_MAX_SCAN_ENTRIES, ge=1)
    """See ``DEFAULT_MAX_SCAN_ENTRIES``."""
