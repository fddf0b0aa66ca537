"""The conformance tests' Docker backend: one per test module, on the image ``make image``
built (``hostsetup.image.ensure``), closed when the module's tests end."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from sandbox_agent.sandbox.docker.docker_backend import DockerBackend


@pytest.fixture(scope="module")
def backend() -> Iterator[DockerBackend]:
    # Imported here, not above: the regression evidence runs these tests on older trees,
    # where a conftest that fails to import would stop the whole folder.
    from sandbox_agent.hostsetup.image import ensure
    from sandbox_agent.sandbox.docker.docker_backend import DockerBackend

    instance = DockerBackend(image_id=ensure().image_id)
    yield instance
    instance.close()
