"""uv's error text -> one ``DependencyError`` line. Pure; tested with uv's real output
(``tests/deps/data/uv/``, captured from uv 0.13.9)."""

from __future__ import annotations

import re

from sandbox_agent.errors import DependencyError

MAX_LINE = 300
SDIST_HINT = (
    "building it from its sdist would run the package's own code, which sandbox-agent "
    "never does on the host (docs/DEPENDENCIES.md, '--allow-sdist')"
)
_NO_WHEEL = re.compile(
    r"Because (?P<name>[A-Za-z0-9_.\-\[\]]+?)(?:[=<>!~][^ ]*)? has no (?:usable wheels|wheels"
    r" with a matching (?P<what>[a-zA-Z ]+?) tag)"
)
_WHEELS_REQUIRED = re.compile(r"Wheels are required for `(?P<name>[^`]+)`")
_NOT_FOUND = re.compile(r"Because (?P<name>[A-Za-z0-9_.\-]+) was not found in the package registry")
_NO_VERSION = re.compile(r"there is no version of (?P<spec>[^ ]+)")
_HASH = re.compile(r"Hash mismatch for `(?P<spec>[^`]+)`")
_UNREACHABLE = (
    "client error (Connect)",
    "dns error",
    "timed out",
    "certificate",
    "Connection refused",
)


def _cause_lines(stderr: str) -> list[str]:
    return [line.strip() for line in stderr.splitlines() if line.strip()]


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_LINE else text[: MAX_LINE - 3] + "..."


def classify(stderr: str, *, index_url: str, platform: str) -> DependencyError:
    """The one-line error for a failed ``uv pip compile``/``install``/``export``."""
    lines = _cause_lines(stderr)
    text = "\n".join(lines)
    if (match := _NO_WHEEL.search(text)) or (match := _WHEELS_REQUIRED.search(text)):
        name = match.group("name")
        what = match.groupdict().get("what")
        which = f"no wheel with a matching {what} tag" if what else "no wheel, only an sdist"
        return DependencyError(
            "no_wheel",
            f"{name}: {which} for CPython 3.11 on {platform}; {SDIST_HINT}",
        )
    if match := _NOT_FOUND.search(text):
        name = match.group("name")
        return DependencyError("not_found", f"{name} is not on the index {index_url}")
    if match := _NO_VERSION.search(text):
        return DependencyError(
            "not_found", f"no version {match.group('spec')} on the index {index_url}"
        )
    if match := _HASH.search(text):
        return DependencyError(
            "hash",
            f"{match.group('spec')}: the downloaded file matches none of the pinned hashes",
        )
    if "No solution found" in text:
        causes = [line.removeprefix("cause: ") for line in lines if line.startswith("cause:")]
        why = causes[0] if causes else "no version satisfies every requirement"
        return DependencyError("conflict", _short(f"the requirements conflict: {why}"))
    fetching = "Failed to fetch" in text or "Failed to download" in text
    if fetching and any(marker in text for marker in _UNREACHABLE):
        last = lines[-1].removeprefix("cause: ") if lines else "no answer"
        return DependencyError(
            "index_unreachable", _short(f"cannot reach the package index {index_url}: {last}")
        )
    first = next((line for line in lines if line.startswith("error:")), lines[0] if lines else "")
    what = first.removeprefix("error: ") or "no output"
    return DependencyError("tool", _short(f"uv failed: {what}"))
