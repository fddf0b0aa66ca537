"""The dependency environment inside the sandbox (issue 17): where it goes on the path,
what it may replace, and PID 1's ``dependencies`` check, on fake trees."""

from __future__ import annotations

import hashlib
import json
import types
from pathlib import Path

import pytest
from supervisor_helpers import valid_config

from sandbox_supervisor import attest, deps
from sandbox_supervisor.config import ConfigError, parse_config
from sandbox_supervisor.inside import Inside

IMAGE_PATH = [
    "/workspace",
    "/usr/lib/python311.zip",
    "/usr/lib/python3.11",
    "/usr/lib/python3.11/lib-dynload",
    "/usr/local/lib/python3.11/dist-packages",
    "/usr/lib/python3/dist-packages",
]
ROOT_MOUNT = "75 51 0:40 / / ro,relatime master:2 - overlay overlay rw,lowerdir=/l"
DEPS_MOUNT = "94 75 254:0 /env /deps {options},relatime - ext4 /dev/vda rw"


def _module(name: str, where: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__file__ = where
    return module


def _site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    for name in ("attr", "json", "pytest", "newpkg", "x-1.0.dist-info"):
        (site / name).mkdir(parents=True)
    (site / "single.py").write_text("")
    (site / "fast.cpython-311-x86_64-linux-gnu.so").write_text("")
    return site


def test_the_environment_goes_after_the_standard_library(tmp_path: Path) -> None:
    site = _site(tmp_path)
    path = list(IMAGE_PATH)
    assert deps.add_to_path(path, {}, str(site))
    assert path == [*IMAGE_PATH[:4], str(site), *IMAGE_PATH[4:]]
    assert deps.provided_names(str(site)) == {"attr", "json", "pytest", "newpkg", "single", "fast"}


def test_only_third_party_modules_the_runner_imported_are_dropped(tmp_path: Path) -> None:
    site = _site(tmp_path)
    dist = "/usr/lib/python3/dist-packages"
    modules = {
        "attr": _module("attr", f"{dist}/attr/__init__.py"),
        "attr._make": _module("attr._make", f"{dist}/attr/_make.py"),
        "json": _module("json", "/usr/lib/python3.11/json/__init__.py"),
        "pytest": _module("pytest", f"{dist}/pytest/__init__.py"),
        "iniconfig": _module("iniconfig", f"{dist}/iniconfig/__init__.py"),
    }
    deps.add_to_path(list(IMAGE_PATH), modules, str(site))  # type: ignore[arg-type]
    # attr is the environment's now; json is the standard library's and pytest the
    # runner's own, whatever the environment holds; iniconfig is not in the environment.
    assert sorted(modules) == ["iniconfig", "json", "pytest"]


def test_without_an_environment_nothing_changes(tmp_path: Path) -> None:
    path = list(IMAGE_PATH)
    modules = {"attr": _module("attr", "/usr/lib/python3/dist-packages/attr/__init__.py")}
    assert not deps.add_to_path(path, modules, str(tmp_path / "missing"))  # type: ignore[arg-type]
    assert path == IMAGE_PATH
    assert list(modules) == ["attr"]


def _inside(tmp_path: Path, mounts: list[str]) -> Inside:
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "self" / "mountinfo").write_text("\n".join(mounts) + "\n")
    (tmp_path / "fs" / "deps").mkdir(parents=True)
    return Inside(proc_root=proc, fs_root=tmp_path / "fs")


def _config(manifest_sha256: str | None) -> attest.Config:
    expect = valid_config()["expect"]
    expect["deps"] = (
        None if manifest_sha256 is None else {"path": "/deps", "manifest_sha256": manifest_sha256}
    )
    return parse_config(json.dumps(valid_config(expect=expect)))


def _environment(fs: Path, manifest: bytes = b'{"v":1}') -> str:
    (fs / "deps" / "manifest.json").write_bytes(manifest)
    (fs / "deps" / "site").mkdir()
    return hashlib.sha256(manifest).hexdigest()


def test_no_environment_expected_means_nothing_there(tmp_path: Path) -> None:
    inside = _inside(tmp_path, [ROOT_MOUNT])
    assert attest.check_dependencies(_config(None), inside).ok
    (tmp_path / "fs" / "deps" / "planted.py").write_text("")
    assert not attest.check_dependencies(_config(None), inside).ok


def test_a_mounted_environment_must_be_the_pinned_one_and_read_only(tmp_path: Path) -> None:
    inside = _inside(tmp_path, [ROOT_MOUNT, DEPS_MOUNT.format(options="ro")])
    digest = _environment(tmp_path / "fs")
    check = attest.check_dependencies(_config(digest), inside)
    assert check.ok, check.detail
    assert not attest.check_dependencies(_config("1" * 64), inside).ok
    (tmp_path / "fs" / "deps" / "extra").write_text("")
    assert not attest.check_dependencies(_config(digest), inside).ok


def test_a_writable_or_missing_mount_fails(tmp_path: Path) -> None:
    writable = _inside(tmp_path / "a", [ROOT_MOUNT, DEPS_MOUNT.format(options="rw")])
    digest = _environment(tmp_path / "a" / "fs")
    assert not attest.check_dependencies(_config(digest), writable).ok
    unmounted = _inside(tmp_path / "b", [ROOT_MOUNT])  # the image's folder, no mount
    digest = _environment(tmp_path / "b" / "fs")
    check = attest.check_dependencies(_config(digest), unmounted)
    assert not check.ok
    assert "nothing is mounted" in check.detail


@pytest.mark.parametrize(
    "deps_value",
    [
        {"path": "/deps"},
        {"path": "deps", "manifest_sha256": "a" * 64},
        {"path": "/deps", "manifest_sha256": "A" * 64},
    ],
)
def test_the_config_pins_an_environment_strictly(deps_value: dict[str, str]) -> None:
    config = valid_config()
    config["expect"]["deps"] = deps_value
    with pytest.raises(ConfigError):
        parse_config(json.dumps(config))
