"""The environment in the one spec: created as declared, verified against the same
declaration (a captured inspect of a real container with one), pinned in PID 1's config."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from sandbox_agent.sandbox.base import EnvironmentMount, SandboxRequest
from sandbox_agent.sandbox.docker.spec import ContainerSpec, build_spec, verify

DATA = Path(__file__).parent / "data"
CREATED: dict[str, Any] = json.loads((DATA / "docker_inspect_deps.json").read_text())["created"]
DIGEST = "a" * 64


def captured(runtime: str) -> tuple[ContainerSpec, dict[str, Any]]:
    entry = CREATED[runtime]
    return ContainerSpec.model_validate(entry["spec"]), copy.deepcopy(entry["inspect"])


def _spec(tmp_path: Path, environment: EnvironmentMount | None) -> ContainerSpec:
    request = SandboxRequest(argv=("python3",), workspace=tmp_path, environment=environment)
    return build_spec(request, "sha256:" + "a" * 64, "b" * 32, "host:1:2")


@pytest.mark.parametrize("runtime", ["runc", "runsc"])
def test_the_captured_inspect_matches_its_spec(runtime: str) -> None:
    spec, inspect = captured(runtime)
    assert spec.environment is not None
    assert verify(spec, inspect) == []


@pytest.mark.parametrize(
    "tamper",
    [
        lambda mounts: mounts[1].update(RW=True),
        lambda mounts: mounts[1].update(Source="/somewhere/else"),
        lambda mounts: mounts[1].update(Destination="/usr/lib/python3.11"),
        lambda mounts: mounts.pop(),
        lambda mounts: mounts.append(dict(mounts[1], Destination="/opt")),
    ],
    ids=["writable", "other-source", "other-target", "missing", "extra"],
)
def test_a_tampered_environment_mount_is_refused(tamper: Any) -> None:
    spec, inspect = captured("runc")
    tamper(inspect["Mounts"])
    assert "Mounts" in verify(spec, inspect)


def test_without_an_environment_one_mount_and_nothing_pinned(tmp_path: Path) -> None:
    spec = _spec(tmp_path, None)
    assert spec.create_body()["HostConfig"]["Binds"] == [f"{tmp_path.resolve()}:/workspace:ro"]
    assert json.loads(spec.config)["expect"]["deps"] is None
    assert "OPENBLAS_NUM_THREADS" not in json.loads(spec.config)["workload_env"]
    _, inspect = captured("runc")  # a container that has an environment
    assert "Mounts" in verify(spec, inspect)


def test_with_an_environment_its_path_and_manifest_are_pinned(tmp_path: Path) -> None:
    env = tmp_path / "env"
    env.mkdir()
    spec = _spec(tmp_path, EnvironmentMount(host_path=env, manifest_sha256=DIGEST))
    assert spec.create_body()["HostConfig"]["Binds"] == [
        f"{tmp_path.resolve()}:/workspace:ro",
        f"{env.resolve()}:/deps:ro",
    ]
    config = json.loads(spec.config)
    assert config["expect"]["deps"] == {"path": "/deps", "manifest_sha256": DIGEST}
    assert "PYTHONPATH" not in config["workload_env"]  # a test's own python never sees it
    assert config["workload_env"]["OPENBLAS_NUM_THREADS"] == "1"
    other = _spec(tmp_path, EnvironmentMount(host_path=env, manifest_sha256="c" * 64))
    assert other.sha256() != spec.sha256()
