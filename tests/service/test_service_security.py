"""Who may call what, and what a client may name: tokens, body limits, fixture names."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from fake_run import FakeRunFunction
from service_harness import TOKEN, LiveServer

from sandbox_agent.cli import main
from sandbox_agent.errors import SetupError
from sandbox_agent.httpguard import is_loopback_name as is_loopback
from sandbox_agent.service.auth import load_or_create_token, token_matches
from sandbox_agent.service.settings import ServiceSettings

SUBMISSION = {"fixture": "paginator", "task": "fix it"}
RUN_ID = "0" * 32
DATA_ENDPOINTS = [
    ("GET", "/runs"),
    ("POST", "/runs"),
    ("GET", f"/runs/{RUN_ID}"),
    ("GET", f"/runs/{RUN_ID}/trace"),
    ("GET", f"/runs/{RUN_ID}/diff"),
    ("GET", f"/runs/{RUN_ID}/events"),
    ("POST", f"/runs/{RUN_ID}/cancel"),
    ("GET", "/fixtures"),
    ("GET", "/preflight"),
]


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer wrong-token-0123456789", f"Basic {TOKEN}", f"Bearer {TOKEN}x", "Bearer"],
)
def test_every_data_endpoint_refuses_a_missing_or_wrong_token(
    server: LiveServer, authorization: str | None
) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    with httpx.Client(base_url=server.url, headers=headers) as client:
        for method, path in DATA_ENDPOINTS:
            answer = client.request(method, path, json=SUBMISSION if method == "POST" else None)
            assert answer.status_code == 401, (method, path)
            assert answer.headers["www-authenticate"] == "Bearer"
        assert client.get("/health").status_code == 200
    with server.client() as client:
        assert client.get("/runs").json()["total"] == 0, "no refused submission was recorded"


def test_oversized_bodies_are_refused_with_413(server: LiveServer) -> None:
    big = {**SUBMISSION, "task": "x" * (server.settings.max_body_bytes + 1)}
    with server.client() as client:
        assert client.post("/runs", json=big).status_code == 413

        def chunks() -> Iterator[bytes]:  # no Content-Length: sent chunked
            for _ in range(server.settings.max_body_bytes // 1024 + 2):
                yield b" " * 1024

        json_type = {"Content-Type": "application/json"}
        chunked = client.post("/runs", content=chunks(), headers=json_type)
        assert chunked.status_code == 413
        assert client.get("/runs").json()["total"] == 0


def test_oversized_requests_are_refused_even_without_a_token(server: LiveServer) -> None:
    answer = httpx.post(f"{server.url}/runs", content=b"x" * (server.settings.max_body_bytes + 1))
    assert answer.status_code == 413


@pytest.mark.parametrize(
    "name", ["../paginator", "/etc", "paginator/../textstats", "..", "./paginator", "a\x00b", ""]
)
def test_a_fixture_path_is_refused(server: LiveServer, name: str) -> None:
    with server.client() as client:
        answer = client.post("/runs", json={**SUBMISSION, "fixture": name})
        assert answer.status_code == 422
        assert client.get("/runs").json()["total"] == 0


def test_only_listed_fixtures_can_be_named(
    make_settings: Callable[..., ServiceSettings],
    start_server: Callable[..., LiveServer],
    tmp_path: Path,
) -> None:
    settings = make_settings()
    outside = tmp_path / "outside"
    outside.mkdir()
    (settings.fixtures_dir / "linked").symlink_to(outside)
    (settings.fixtures_dir / "afile").write_text("not a folder")
    server = start_server(settings, FakeRunFunction())
    with server.client() as client:
        assert client.get("/fixtures").json()["fixtures"] == ["paginator", "textstats"]
        for name in ("linked", "afile", "missing"):
            answer = client.post("/runs", json={**SUBMISSION, "fixture": name})
            assert answer.status_code == 400, name
            assert "GET /fixtures" in answer.json()["detail"]
        unknown = client.post("/runs", json={**SUBMISSION, "provider": "anthropic"})
        assert unknown.status_code == 400
        extra = client.post("/runs", json={**SUBMISSION, "repo": "/etc"})
        assert extra.status_code == 422


def test_the_token_file_is_made_once_with_mode_0600(tmp_path: Path) -> None:
    path = tmp_path / "state" / "token"
    made = load_or_create_token(path)
    assert made.created
    assert len(made.token) >= 32
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again = load_or_create_token(path)
    assert again == (made.token, False)
    path.chmod(0o644)
    with pytest.raises(SetupError, match="chmod 600"):
        load_or_create_token(path)
    path.chmod(0o600)
    path.write_text("short\n")
    with pytest.raises(SetupError, match="no usable token"):
        load_or_create_token(path)


def test_a_token_file_that_is_a_symlink_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.write_text("x" * 40)
    real.chmod(0o600)
    link = tmp_path / "token"
    link.symlink_to(real)
    with pytest.raises(OSError, match="Too many levels of symbolic links"):  # O_NOFOLLOW
        load_or_create_token(link)


def test_token_comparison() -> None:
    assert token_matches(TOKEN, f"Bearer {TOKEN}")
    assert token_matches(TOKEN, f"bearer {TOKEN}")
    for given in (None, "", TOKEN, f"Bearer {TOKEN[:-1]}", f"Bearer {TOKEN}0", "Bearer é"):
        assert not token_matches(TOKEN, given)


def test_loopback_addresses() -> None:
    assert all(map(is_loopback, ["127.0.0.1", "127.1.2.3", "::1", "localhost"]))
    assert not any(map(is_loopback, ["0.0.0.0", "::", "10.0.0.1", "example.com", ""]))  # noqa: S104


def test_serve_refuses_a_public_address_without_a_token_file(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SANDBOX_AGENT_HOME", str(tmp_path))
    assert main(["serve", "--host", "0.0.0.0"]) == 2  # noqa: S104
    error = capsys.readouterr().err
    assert len(error.strip().splitlines()) == 1
    assert "--token-file" in error
    assert not (tmp_path / "service" / "token").exists(), "refused before making a token"
    assert main(["serve", "--port", "70000"]) == 2
    assert "--port" in capsys.readouterr().err
    # Nothing of the service's: the CLI itself may record the runner image Docker already
    # holds (image.json) before any command that starts sandboxes (cli.SANDBOX_COMMANDS).
    assert set(os.listdir(tmp_path)) <= {"image.json"}


@pytest.mark.parametrize("body", [b"\x80", b"{", b'{"fixture": 1}'])
@pytest.mark.parametrize(
    "authorization", [None, "Bearer", "Basic YWxhZGRpbg==", "Bearer wrong-token-value"]
)
def test_an_unauthenticated_body_is_refused_before_it_is_parsed(
    server: LiveServer, body: bytes, authorization: str | None
) -> None:
    # Regression (schemathesis found it): the route's token dependency ran after FastAPI
    # parsed the body, so a malformed body without a token got a 400 describing it.
    headers = {"content-type": "application/json"}
    if authorization is not None:
        headers["authorization"] = authorization
    answer = httpx.post(f"{server.url}/runs", content=body, headers=headers)
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"] == "Bearer"
    assert answer.headers["x-content-type-options"] == "nosniff"
