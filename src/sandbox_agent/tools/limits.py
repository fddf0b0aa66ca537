"""Bounds on what each tool reads, returns and writes. Every limit has a named default."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

KiB = 1024
MiB = 1024 * KiB
DEFAULT_MAX_LIST_FILES = 500
DEFAULT_MAX_READ_LINES = 400
DEFAULT_MAX_READ_BYTES = 32 * KiB
DEFAULT_MAX_LINE_CHARS = 2000
DEFAULT_MAX_READ_FILE_BYTES = 4 * MiB
DEFAULT_MAX_SEARCH_MATCHES = 100
DEFAULT_MAX_SEARCH_FILE_BYTES = 1 * MiB
DEFAULT_MAX_SEARCH_TOTAL_BYTES = 32 * MiB
DEFAULT_MAX_MATCH_CHARS = 200
DEFAULT_MAX_SEARCH_SECONDS = 5.0
DEFAULT_MAX_PATCH_FILE_BYTES = 1 * MiB
DEFAULT_MAX_PATCH_TOTAL_BYTES = 2 * MiB
DEFAULT_MAX_TEST_SUMMARY_BYTES = 2 * KiB
DEFAULT_TEST_SUMMARY_LINES = 20


class ToolLimits(BaseModel):
    """What one tool call may read, return or write."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_list_files: int = Field(DEFAULT_MAX_LIST_FILES, ge=1)
    """Paths returned by one ``list_files``."""
    max_read_lines: int = Field(DEFAULT_MAX_READ_LINES, ge=1)
    """Lines returned by one ``read_file`` (ask again with ``start_line`` for more)."""
    max_read_bytes: int = Field(DEFAULT_MAX_READ_BYTES, ge=256)
    """Bytes of text returned by one ``read_file``."""
    max_line_chars: int = Field(DEFAULT_MAX_LINE_CHARS, ge=80)
    """Characters kept of one line; longer lines are cut and marked."""
    max_read_file_bytes: int = Field(DEFAULT_MAX_READ_FILE_BYTES, ge=1)
    """Largest file ``read_file`` opens (``path.too_large`` above)."""
    max_search_matches: int = Field(DEFAULT_MAX_SEARCH_MATCHES, ge=1)
    """Matching lines returned by one ``search``."""
    max_search_file_bytes: int = Field(DEFAULT_MAX_SEARCH_FILE_BYTES, ge=1)
    """Files larger than this are skipped by ``search``."""
    max_search_total_bytes: int = Field(DEFAULT_MAX_SEARCH_TOTAL_BYTES, ge=1)
    """Bytes scanned by one ``search`` before it stops (marked truncated)."""
    max_match_chars: int = Field(DEFAULT_MAX_MATCH_CHARS, ge=20)
    """Characters kept of each matching line."""
    max_search_seconds: float = Field(DEFAULT_MAX_SEARCH_SECONDS, gt=0)
    """Wall-clock time one ``search`` may spend matching before it stops (marked truncated)."""
    max_patch_file_bytes: int = Field(DEFAULT_MAX_PATCH_FILE_BYTES, ge=1)
    """Largest file ``apply_patch`` edits or writes."""
    max_patch_total_bytes: int = Field(DEFAULT_MAX_PATCH_TOTAL_BYTES, ge=1)
    """Sum of the sizes of every file one ``apply_patch`` writes."""
    max_test_summary_bytes: int = Field(DEFAULT_MAX_TEST_SUMMARY_BYTES, ge=200)
    """Size of a test run's summary (counts and the last lines of output)."""
    test_summary_lines: int = Field(DEFAULT_TEST_SUMMARY_LINES, ge=1)
    """Last lines of test output kept in the summary."""
