"""A missing local model says where it looked and which variable moves that place
(issue 30, item 5): with a fresh state folder, "not built" alone does not say whether
the cache is elsewhere or empty. No model server is started here."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sandbox_agent.errors import SetupError
from sandbox_agent.localmodel import paths, server
from sandbox_agent.localmodel.fetch import check_model


@pytest.fixture
def empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SANDBOX_AGENT_HOME", str(tmp_path / "state"))
    monkeypatch.delenv(paths.CACHE_ENV, raising=False)
    monkeypatch.delenv(paths.SERVER_DIR_ENV, raising=False)
    return tmp_path / "state" / "localmodel"


def test_a_server_not_built_names_the_folder_and_the_variables(empty_cache: Path) -> None:
    with pytest.raises(SetupError) as refused:
        server.ensure_running()
    message = str(refused.value)
    assert "\n" not in message
    assert f"llama-server is not built in {empty_cache / 'builds'}" in message
    assert paths.CACHE_ENV in message
    assert "SANDBOX_AGENT_HOME" in message
    assert "make model" in message


def test_a_cache_moved_by_its_variable_is_named_as_such(
    empty_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(paths.CACHE_ENV, str(tmp_path / "elsewhere"))
    with pytest.raises(SetupError) as refused:
        server.ensure_running()
    message = str(refused.value)
    assert f"{tmp_path / 'elsewhere' / 'builds'}" in message
    assert f"{paths.CACHE_ENV}={tmp_path / 'elsewhere'}" in message


def test_a_missing_model_names_the_file_and_the_variable(empty_cache: Path) -> None:
    with pytest.raises(SetupError) as refused:
        check_model(paths.model_path())
    message = str(refused.value)
    assert f"no local model at {paths.model_path()}" in message
    assert paths.CACHE_ENV in message
    assert "run 'make model'" in message
    assert not os.path.exists(empty_cache), "looking creates nothing"
