"""The runner image recipe: tagged by its inputs, recorded, and free of shells and installers."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sandbox_agent.errors import SetupError
from sandbox_agent.hostsetup import image


@pytest.fixture
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SANDBOX_AGENT_HOME", str(tmp_path / "state"))
    return tmp_path / "state"


def test_tag_changes_when_the_supervisor_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "sandbox_supervisor"
    shutil.copytree(image.SUPERVISOR_SOURCE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(image, "SUPERVISOR_SOURCE", copy)
    before = image.expected_tag()
    assert before == image.expected_tag(), "the tag must be deterministic"
    (copy / "__init__.py").write_text((copy / "__init__.py").read_text() + "\n# changed\n")
    assert image.expected_tag() != before


def test_tag_ignores_bytecode_caches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = tmp_path / "sandbox_supervisor"
    shutil.copytree(image.SUPERVISOR_SOURCE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(image, "SUPERVISOR_SOURCE", copy)
    before = image.expected_tag()
    (copy / "__pycache__").mkdir()
    (copy / "__pycache__" / "protocol.cpython-311.py").write_text("junk")
    assert image.expected_tag() == before


def test_missing_record_says_to_build(state_home: Path) -> None:
    assert image.load_record() is None
    with pytest.raises(SetupError, match="make image"):
        image.current_record()


def test_unreadable_record_is_treated_as_missing(state_home: Path) -> None:
    state_home.mkdir(parents=True)
    (state_home / "image.json").write_text("{not json")
    assert image.load_record() is None


def test_record_for_other_inputs_is_refused(state_home: Path) -> None:
    state_home.mkdir(parents=True)
    stale = image.ImageRecord(
        tag=f"{image.IMAGE_REPOSITORY}:0000000000000000",
        image_id="sha256:" + "0" * 64,
        inputs_sha256="0" * 64,
        built_at=0.0,
    )
    (state_home / "image.json").write_text(stale.model_dump_json())
    with pytest.raises(SetupError, match="not built"):
        image.current_record()


@pytest.mark.docker
def test_image_has_no_shell_installer_or_setuid_file() -> None:
    import docker

    record = image.current_record()
    probe = (
        "import os, stat\n"
        "names = ['/bin/sh', '/usr/bin/sh', '/usr/bin/bash', '/usr/bin/dash', '/usr/bin/rbash',\n"
        "         '/usr/bin/apt', '/usr/bin/apt-get', '/usr/bin/dpkg', '/usr/bin/perl',\n"
        "         '/usr/bin/su', '/usr/bin/mount']\n"
        "found = [n for n in names if os.path.lexists(n)]\n"
        "for top in ('/usr', '/etc', '/var', '/opt'):\n"
        "    for d, _, files in os.walk(top):\n"
        "        for f in files:\n"
        "            p = os.path.join(d, f)\n"
        "            m = os.lstat(p).st_mode\n"
        "            if stat.S_ISREG(m) and m & (stat.S_ISUID | stat.S_ISGID):\n"
        "                found.append(p)\n"
        "import sandbox_supervisor, unittest, pytest\n"
        "print(repr(found), sandbox_supervisor.__file__)\n"
    )
    client = docker.from_env(version="1.41")
    try:
        out = client.containers.run(
            record.image_id,
            ["/usr/bin/python3", "-I", "-c", probe],
            network_mode="none",
            user="10001:10001",
            cap_drop=["ALL"],
            remove=True,
        )
    finally:
        client.close()
    found, location = out.decode().split()
    assert found == "[]"
    assert location == "/usr/lib/python3.11/sandbox_supervisor/__init__.py"
