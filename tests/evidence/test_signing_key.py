"""The signing key: generated once, 0600, refused when others could read or own it."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from sandbox_agent.errors import SetupError
from sandbox_agent.evidence import load_or_create_signing_key
from sandbox_agent.evidence.keys import fingerprint, private_key_path, public_key_path


def test_generated_at_first_use_with_mode_0600(tmp_path: Path) -> None:
    key = load_or_create_signing_key(tmp_path)
    info = private_key_path(tmp_path).stat()
    assert stat.S_IMODE(info.st_mode) == 0o600
    assert public_key_path(tmp_path).read_bytes().startswith(b"-----BEGIN PUBLIC KEY-----")
    again = load_or_create_signing_key(tmp_path)
    assert fingerprint(again.public_key()) == fingerprint(key.public_key())


def test_a_readable_key_is_refused(tmp_path: Path) -> None:
    load_or_create_signing_key(tmp_path)
    os.chmod(private_key_path(tmp_path), 0o640)
    with pytest.raises(SetupError, match="chmod 600"):
        load_or_create_signing_key(tmp_path)


def test_a_key_of_another_owner_is_refused(tmp_path: Path) -> None:
    load_or_create_signing_key(tmp_path)
    if os.geteuid() != 0:
        pytest.skip("changing a file's owner needs root")
    os.chown(private_key_path(tmp_path), 12345, 12345)
    with pytest.raises(SetupError, match="belongs to uid 12345"):
        load_or_create_signing_key(tmp_path)


def test_a_symlinked_key_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    load_or_create_signing_key(elsewhere)
    home = tmp_path / "home"
    home.mkdir()
    private_key_path(home).symlink_to(private_key_path(elsewhere))
    with pytest.raises(SetupError, match="cannot open"):
        load_or_create_signing_key(home)


def test_concurrent_first_use_agrees_on_one_key(tmp_path: Path) -> None:
    prints: list[str] = []

    def load() -> None:
        prints.append(fingerprint(load_or_create_signing_key(tmp_path).public_key()))

    threads = [threading.Thread(target=load) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(prints)) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["signing-key.pem", "signing-key.pub"]
