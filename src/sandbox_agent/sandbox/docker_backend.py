"""Moved to ``sandbox_agent.sandbox.docker.docker_backend`` (issue 31). This name stays
only until the last importers of the old path (cluster/, evals/, stress/, their tests,
and some benchmarks) import from there; then it goes."""

from sandbox_agent.sandbox.docker.docker_backend import DOCKER_API_VERSION, DockerBackend

__all__ = ["DOCKER_API_VERSION", "DockerBackend"]
