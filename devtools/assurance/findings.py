"""The security review's findings as a list a machine can check and rerun.

``docs/findings.toml`` holds one ``[[finding]]`` table per finding (or per part of one,
when a finding was fixed in part)::

    [[finding]]
    id = "SR-5 F2"              # the review's section and the finding's own id
    severity = "medium"
    title = "search could hold the controller for minutes"
    fix = "9af58a9"             # the commit of the fix, or "open" (its tests are strict xfails)
    before = "bd5ad51"          # optional: the commit before the fix (default: fix's parent)
    tests = ["tests/tools/test_tools_review_sr5.py::test_sr5_f2_search_stops_at_its_time_limit"]
    note = ""                   # optional: what the evidence row needs said about it

The review is ``docs/SECURITY_REVIEW.md``'s ``## SR-<n>.`` sections and every
``docs/review/SR-<n>*.md``. A finding there is a bold id with its severity and state in
brackets, ``**F1 (high, open)**`` or ``**S8-2 (low, fixed)**`` (or a heading
``### S8-2 (low, fixed)``); a section with no such id is one finding named by the section
(``SR-1``). Every finding needs an entry unless
its severity is ``informational``.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from devtools.assurance import gitrepo
from devtools.assurance.guarantees import CollectedTest, collect, unresolved_tests
from sandbox_agent.errors import SetupError, UsageError
from sandbox_agent.settings import PROJECT_ROOT

FINDINGS_FILE = PROJECT_ROOT / "docs" / "findings.toml"
REVIEW_FILE = PROJECT_ROOT / "docs" / "SECURITY_REVIEW.md"
REVIEW_FOLDER = PROJECT_ROOT / "docs" / "review"
OPEN = "open"
SEVERITIES = ("critical", "high", "medium", "low-medium", "low", "informational")
Severity = Literal["critical", "high", "medium", "low-medium", "low", "informational"]

_HEADING = re.compile(r"^(#{1,2}) (.*)$")
_SECTION = re.compile(r"^(SR-\d+)\b\.?(.*)$")
_BOLD_ID = re.compile(r"\*\*([A-Z][A-Za-z]*\d+(?:-\d+)?) \(([^)]*)\)")
_HEADING_ID = re.compile(r"^#{3,6} ([A-Z][A-Za-z]*\d+(?:-\d+)?)\.? \(([^)]*)\)")
_TRAILING_META = re.compile(r"\(([^()]*)\)\s*$")
_FILE_SECTION = re.compile(r"^(SR-\d+)")


class Finding(BaseModel):
    """One entry of ``docs/findings.toml``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^SR-\d+( [A-Z][A-Za-z]*\d+(-\d+)?)?$")
    """The review's section, then the finding's own id when it has one: ``SR-3 G1``."""
    severity: Severity
    """As the review states it; chosen here (and said in ``note``) where it states none."""
    title: str = Field(min_length=1, max_length=200)
    """What was wrong, in a line; tells the parts of one finding apart."""
    fix: str = Field(pattern=rf"^([0-9a-f]{{7,40}}|{OPEN})$")
    """The commit that fixed it (the last one, when it took several), or ``open``."""
    before: str | None = Field(default=None, pattern=r"^[0-9a-f]{7,40}$")
    """The commit before the fix, whose code still has the hole; default: fix's parent."""
    tests: tuple[str, ...] = Field(min_length=1)
    """``tests/...py::test_name[case]``: the regression tests that prove the fix."""
    note: str = ""
    """Shown in the evidence row: why a test is not applicable before the fix, and such."""

    @property
    def is_open(self) -> bool:
        return self.fix == OPEN


class FindingsFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    finding: list[Finding]


class ReviewFinding(NamedTuple):
    id: str
    severity: str | None
    """One of SEVERITIES when the review states it, else None."""
    state: Literal["open", "fixed"] | None
    """What the brackets say: ``open``, ``fixed`` (also closed, mitigated), or neither."""

    @property
    def needs_entry(self) -> bool:
        return self.severity != "informational"


def load(path: Path = FINDINGS_FILE) -> list[Finding]:
    """Every entry of the findings list.

    Raises:
        UsageError: the file is missing, not TOML, or an entry breaks the schema (one line).
    """
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as error:  # TOMLDecodeError is a ValueError
        raise UsageError(f"{path}: cannot read the findings list ({error})") from error
    try:
        entries = FindingsFile.model_validate(data).finding
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise UsageError(f"{path}: {where}: {first['msg']}") from error
    for entry in entries:
        if entry.is_open and entry.before is not None:
            raise UsageError(f"{path}: {entry.id}: an open finding has no 'before' commit")
    return entries


def _meta(text: str) -> tuple[str | None, Literal["open", "fixed"] | None]:
    """Severity and state from a finding's brackets: ``high, open`` -> (high, open)."""
    first = re.split(r"[,;]", text, maxsplit=1)[0].strip().lower()
    severity = first if first in SEVERITIES else None
    if re.search(r"\bopen\b", text, re.IGNORECASE):
        return severity, "open"
    if re.search(r"\b(fixed|closed|mitigated)\b", text, re.IGNORECASE):
        return severity, "fixed"
    return severity, None


def parse_review(text: str, section: str | None = None) -> list[ReviewFinding]:
    """The findings of one review document, in order.

    ``section`` is the document's own section (``SR-8`` for ``docs/review/SR-8-service.md``):
    findings before any ``SR-<n>`` heading, or under a level-2 heading of another name,
    belong to it. A section with no bold finding id is one finding by itself.
    """
    default = section
    found: dict[str, ReviewFinding] = {}
    titles: dict[str, str] = {} if section is None else {section: ""}
    for line in text.splitlines():
        heading = _HEADING.match(line)
        if heading:
            named = _SECTION.match(heading[2])
            if named:
                section = named[1]
                titles.setdefault(section, named[2])
            elif len(heading[1]) == 2:
                section = default
            continue
        if section is None:
            continue
        for finding_id, meta in _BOLD_ID.findall(line) + _HEADING_ID.findall(line):
            key = f"{section} {finding_id}"
            found.setdefault(key, ReviewFinding(key, *_meta(meta)))
    for name, title in titles.items():
        if not any(key.startswith(f"{name} ") for key in found):
            meta = _TRAILING_META.search(title)
            found[name] = ReviewFinding(name, *(_meta(meta[1]) if meta else (None, None)))
    return list(found.values())


def review_findings(
    review: Path = REVIEW_FILE, folder: Path = REVIEW_FOLDER
) -> list[ReviewFinding]:
    """Every finding of ``docs/SECURITY_REVIEW.md`` and of ``docs/review/SR-*.md``.

    A section whose findings are written in another file is not a finding by itself.
    """
    rows = parse_review(review.read_text(encoding="utf-8"))
    for path in sorted(folder.glob("SR-*.md")) if folder.is_dir() else []:
        named = _FILE_SECTION.match(path.name)
        rows += parse_review(path.read_text(encoding="utf-8"), named[1] if named else None)
    with_ids = {row.id.split(" ", 1)[0] for row in rows if " " in row.id}
    unique: dict[str, ReviewFinding] = {}
    for row in rows:
        if row.id not in with_ids:
            unique.setdefault(row.id, row)
    return sorted(unique.values(), key=lambda row: int(row.id.split(" ")[0][3:]))


def problems(
    entries: list[Finding], review: list[ReviewFinding], root: Path = PROJECT_ROOT
) -> list[str]:
    """Every way the list and the review disagree, and every named test that would not run."""
    found: list[str] = []
    by_id: dict[str, list[Finding]] = {}
    for entry in entries:
        by_id.setdefault(entry.id, []).append(entry)
    keys = [(entry.id, entry.title) for entry in entries]
    found += [
        f"{key[0]}: two entries titled {key[1]!r}" for key in set(keys) if keys.count(key) > 1
    ]
    known = {row.id: row for row in review}
    found += [f"{name}: no such finding in the review" for name in by_id if name not in known]
    for row in review:
        mine = by_id.get(row.id, [])
        if not mine:
            if row.needs_entry:
                found.append(f"{row.id}: no entry in docs/findings.toml")
            continue
        found += [
            f"{row.id}: severity {entry.severity}, the review says {row.severity}"
            for entry in mine
            if row.severity is not None and entry.severity != row.severity
        ]
        if row.state == "open" and not any(entry.is_open for entry in mine):
            found.append(f"{row.id}: the review says open, no entry is")
        if row.state == "fixed" and all(entry.is_open for entry in mine):
            found.append(f"{row.id}: the review says fixed, every entry is open")
    collected = collect([test for entry in entries for test in entry.tests], root)
    for entry in entries:
        found += named_test_problems(entry, collected)
    return found


def named_test_problems(entry: Finding, collected: dict[str, CollectedTest]) -> list[str]:
    """A fixed finding's tests must run and pass here; an open one's must be strict xfails."""
    if not entry.is_open:
        return unresolved_tests(entry.id, entry.tests, collected)
    found: list[str] = []
    for test in entry.tests:
        item = collected.get(test)
        if item is None:
            found.append(f"{entry.id}: {test}: not collected (no such test)")
        elif item.skip_only is not None:
            found.append(f"{entry.id}: {test}: skipped here ({item.skip_only})")
        elif item.xfail is None or not item.strict:
            found.append(f"{entry.id}: {test}: an open finding's test must be a strict xfail")
    return found


def commit_problems(entries: Iterable[Finding], root: Path = PROJECT_ROOT) -> list[str]:
    """Commits that are not in this clone, or not in the order before -> fix -> HEAD."""
    found: list[str] = []
    for entry in entries:
        if entry.is_open:
            continue
        try:
            fix = gitrepo.resolve(entry.fix, root)
            before = gitrepo.resolve(entry.before, root) if entry.before else None
        except SetupError as error:
            found.append(f"{entry.id}: {error}")
            continue
        if not gitrepo.is_ancestor(fix, "HEAD", root):
            found.append(f"{entry.id}: fix {entry.fix} is not in HEAD's history")
        if before is not None and (before == fix or not gitrepo.is_ancestor(before, fix, root)):
            found.append(f"{entry.id}: before {entry.before} is not an ancestor of fix {entry.fix}")
    return found


def before_commit(entry: Finding, root: Path = PROJECT_ROOT) -> str:
    """The full hash of the commit whose code still had the hole.

    Raises:
        SetupError: the commit is not in this clone.
    """
    if entry.is_open:
        raise ValueError(f"{entry.id} is open: it has no commit before a fix")
    return (
        gitrepo.resolve(entry.before, root)
        if entry.before
        else gitrepo.first_parent(entry.fix, root)
    )
