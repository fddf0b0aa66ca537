"""Moved to ``sandbox_agent.sandbox.docker.spec`` (issue 31). This name stays only until
the evals tests (``judge_harness.py``, ``test_judge_deadline.py``) import from there."""

from sandbox_agent.sandbox.docker.spec import judge_input

__all__ = ["judge_input"]
