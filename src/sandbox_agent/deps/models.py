"""The dependency environment's contracts: options, the made environment, a package.

Light on purpose (pydantic only): the controller imports it on every run, with or
without dependencies; the modules that read, resolve and make are imported only when
a repository declares something (``environment.prepare_environment``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from sandbox_agent.sandbox.base import EnvironmentMount


class Package(BaseModel):
    """One installed distribution."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    version: str


DEFAULT_INDEX_URL = "https://pypi.org/simple"
MiB = 1024 * 1024
DEFAULT_MAX_BYTES = 1024 * MiB
"""The largest environment made without ``--deps-max-bytes`` (1 GiB: numpy and pandas
together are ~150 MiB unpacked)."""
DEFAULT_TIMEOUT_S = 600.0
"""The longest the dependency phase (read, resolve, download, unpack) may take without
``--deps-timeout``; the run's own wall clock bounds it too (SR-12 D3)."""
MAX_TIMEOUT_S = 86_400.0
DepsMode = Literal["auto", "off"]


class DepsOptions(BaseModel):
    """How a run's dependency environment is made (``run``/``eval`` flags ``--deps*``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: DepsMode = "auto"
    """``auto``: from what the repository declares; ``off``: no environment."""
    index_url: str = Field(DEFAULT_INDEX_URL, pattern=r"^https?://\S+$")
    """The package index (PEP 503 simple API) wheels come from."""
    max_bytes: int = Field(DEFAULT_MAX_BYTES, ge=MiB)
    """Refuse an environment larger than this, unpacked."""
    timeout_s: float = Field(DEFAULT_TIMEOUT_S, gt=0, le=MAX_TIMEOUT_S)
    """The whole dependency phase ends by then (and by the run's wall clock)."""


class Environment(BaseModel):
    """A made, read-only environment, as a run uses and reports it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    hash: str
    """The resolution's sha256: the same packages for the same target, the same hash."""
    packages: tuple[Package, ...]
    path: Path
    manifest_sha256: str
    source: str
    """``resolved``, ``pylock.toml`` or ``uv.lock``."""
    size_bytes: int
    made: bool
    """True when this call made it (downloaded and unpacked); False when it was found."""
    resolved: bool
    """True when this call resolved the declarations (the first time)."""
    sources: tuple[str, ...] = ()
    """The repository's files it was made from (protected paths for the run)."""
    prepare_ms: float

    def mount(self) -> EnvironmentMount:
        return EnvironmentMount(host_path=self.path, manifest_sha256=self.manifest_sha256)

    def summary(self) -> dict[str, Any]:
        """The run result's ``environment: {hash, packages}`` (docs/CONTRACT.md section 5)."""
        return {
            "hash": self.hash,
            "packages": [package.model_dump() for package in self.packages],
        }
