"""What the regression evidence holds: one row per finding (its tests before its fix and
now, and the verdict), and the page's data (``regression`` gathers it, ``regression_render``
writes it)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from devtools.assurance.findings import Finding
from devtools.assurance.regression_run import CaseRun


class FindingEvidence(BaseModel):
    model_config = ConfigDict(extra="forbid")

    finding: Finding
    before_commit: str | None
    before: list[CaseRun]
    after: list[CaseRun]
    caveats: list[str]
    verdict: str
    ok: bool


class Evidence(BaseModel):
    model_config = ConfigDict(extra="forbid")

    generated: str
    commit: str
    duration_s: float
    runtimes: list[str]
    rows: list[FindingEvidence]
