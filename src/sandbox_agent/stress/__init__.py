"""Sandbox lifecycle stress: ``run_stress`` and its report (``sandbox-agent stress``)."""

from __future__ import annotations

from sandbox_agent.stress.report import RunOutcome, StressReport
from sandbox_agent.stress.runner import StressConfig, run_stress

__all__ = ["RunOutcome", "StressConfig", "StressReport", "run_stress"]
