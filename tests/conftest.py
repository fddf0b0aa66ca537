"""Suite-wide rules: Docker tests skip with a visible reason when no daemon or image is
there, and fail instead when ``SANDBOX_AGENT_REQUIRE_DOCKER=1`` (CI). Local-model tests
(``localmodel``) do the same when ``make model`` has not built the server and fetched
the model: skipped with the reason, failed when ``SANDBOX_AGENT_REQUIRE_DOCKER=1`` or
``SANDBOX_AGENT_REQUIRE_LOCALMODEL=1`` (CI must prove the real model, not skip it).

Skipped Docker and local-model tests are also listed in ``$SANDBOX_AGENT_SKIP_LOG`` when
it is set, so ``.ci/run`` can refuse a run that skipped any of them.

The test doubles of ``tests/doubles/`` are registered for the whole session
(``SANDBOX_AGENT_TEST_DOUBLES``).
"""

from __future__ import annotations

import functools
import gc
import os
import warnings
from collections.abc import Generator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Property tests check what is computed, never how fast: Hypothesis's defaults fail an
# example that takes over 200 ms ("deadline") or data that is slow to make ("too_slow"),
# and a loaded machine or a late garbage collection does both. One profile for every
# property test, so a new one cannot forget it.
settings.register_profile(
    "sandbox-agent", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("sandbox-agent")

# The suite's test doubles (``scripted-slow``) are not in the package: naming their file
# here registers them in this process when first looked up, and in every process a
# test starts (the CLI, ``serve``, Ray nodes inherit the environment). One value for
# the whole session, set before any test runs.
TEST_DOUBLE_FILES = (Path(__file__).parent / "doubles" / "slow_provider.py",)
try:
    from sandbox_agent.providers import TEST_DOUBLES_ENV
except ImportError:  # an older tree ships its doubles in the package: the regression
    pass  # evidence runs today's tests there, and a conftest that fails to import stops all
else:
    os.environ[TEST_DOUBLES_ENV] = os.pathsep.join(str(p) for p in TEST_DOUBLE_FILES)

REQUIRE_DOCKER_ENV = "SANDBOX_AGENT_REQUIRE_DOCKER"
REQUIRE_LOCALMODEL_ENV = "SANDBOX_AGENT_REQUIRE_LOCALMODEL"
SKIP_LOG_ENV = "SANDBOX_AGENT_SKIP_LOG"


def docker_required() -> bool:
    return os.environ.get(REQUIRE_DOCKER_ENV) == "1"


@functools.cache
def docker_problem() -> str | None:
    """Why Docker tests cannot run here, or None when the daemon and the image are ready."""
    try:
        import docker

        client = docker.from_env(version="1.41", timeout=10)
        try:
            client.ping()
        finally:
            client.close()
    except Exception as error:
        refused = f"no Docker daemon answers ({type(error).__name__}); run 'make test' to set it up"
    else:
        refused = None
    if refused is not None:
        # A refused connection leaves the SDK's unix socket to the garbage collector (once
        # the exception is gone); its ResourceWarning would otherwise surface, as an error,
        # in whichever test happens to run next.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            gc.collect()
        return refused
    from sandbox_agent.errors import SetupError
    from sandbox_agent.hostsetup import image

    try:
        image.current_record()
    except SetupError as error:
        return str(error)
    return None


@functools.cache
def localmodel_problem() -> str | None:
    """Why local-model tests cannot run here, or None when ``make model`` is done."""
    from sandbox_agent.errors import SetupError
    from sandbox_agent.localmodel import paths
    from sandbox_agent.localmodel.build import build_options, find_build
    from sandbox_agent.localmodel.fetch import check_model

    if find_build(paths.builds_dir(), build_options()) is None:
        return f"llama-server is not built in {paths.builds_dir()}: run 'make model'"
    try:
        check_model(paths.model_path())
    except SetupError as error:
        return str(error)
    return None


def localmodel_required() -> bool:
    return docker_required() or os.environ.get(REQUIRE_LOCALMODEL_ENV) == "1"


@functools.cache
def runsc_problem() -> str | None:
    import docker

    client = docker.from_env(version="1.41", timeout=10)
    try:
        runtimes = client.info().get("Runtimes", {})
    finally:
        client.close()
    return None if "runsc" in runtimes else "runsc is not registered with the Docker daemon"


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("localmodel") and (missing := localmodel_problem()) is not None:
        if localmodel_required():
            pytest.fail(f"the local model is required here: {missing}", pytrace=False)
        pytest.skip(f"local-model test skipped: {missing}")
    problem: str | None = None
    if item.get_closest_marker("docker") or item.get_closest_marker("runsc"):
        problem = docker_problem()
    if problem is None and item.get_closest_marker("runsc"):
        problem = runsc_problem()
    if problem is None:
        return
    if docker_required():
        pytest.fail(f"Docker is required here ({REQUIRE_DOCKER_ENV}=1): {problem}", pytrace=False)
    pytest.skip(f"Docker test skipped: {problem}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    log = os.environ.get(SKIP_LOG_ENV)
    is_docker = (
        item.get_closest_marker("docker")
        or item.get_closest_marker("runsc")
        or item.get_closest_marker("localmodel")
    )
    # An xfail is reported as skipped too; it ran, so it is not a skipped Docker test.
    if log and is_docker and report.skipped and not hasattr(report, "wasxfail"):
        with Path(log).open("a", encoding="utf-8") as handle:
            handle.write(f"{item.nodeid}\n")
    return report
