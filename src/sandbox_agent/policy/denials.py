"""Moved to ``sandbox_agent.denials`` (issue 31): the denial codes are a vocabulary below
the workspace. This module stays only until ``evals/scoring.py`` imports from there."""

from sandbox_agent.denials import ALL_DENIAL_CODES

__all__ = ["ALL_DENIAL_CODES"]
