"""`sandbox-agent serve` itself: a token made and printed once, defaults under the state folder."""

from __future__ import annotations

import os
import re
import signal
import socket
import stat
import subprocess
import sys
from pathlib import Path

import httpx

URL_LINE = re.compile(r"^sandbox-agent serve: (http://127\.0\.0\.1:(\d+))/ ")


def _serve(home: Path) -> tuple[list[str], str]:
    """Start `serve --port 0`, read the URL it prints, list the runs with the stored token,
    stop. The URL is printed once the socket is bound: it answers at once, no polling."""
    env = {**os.environ, "SANDBOX_AGENT_HOME": str(home)}
    command = [sys.executable, "-m", "sandbox_agent", "serve", "--port", "0"]
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    lines: list[str] = []
    try:
        assert process.stdout is not None
        while (match := URL_LINE.match(line := process.stdout.readline())) is None:
            assert line, f"serve ended without printing its URL: {lines}"
            lines.append(line.rstrip("\n"))
        lines.append(line.rstrip("\n"))
        url, port = match.group(1), int(match.group(2))
        assert port != 0
        httpx.get(f"{url}/health", timeout=30).raise_for_status()
        token = (home / "service" / "token").read_text().strip()
        runs = httpx.get(f"{url}/runs", headers={"Authorization": f"Bearer {token}"})
        assert runs.json() == {"runs": [], "total": 0}
    finally:
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=30)
    return lines + output.splitlines(), token


def test_serve_makes_its_token_once_and_prints_it_once(tmp_path: Path) -> None:
    first_lines, token = _serve(tmp_path)
    assert any(token in line for line in first_lines)
    token_file = tmp_path / "service" / "token"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert (tmp_path / "service" / "runs.sqlite3").exists()
    second_lines, same_token = _serve(tmp_path)
    assert same_token == token
    assert not any(token in line for line in second_lines), "printed only when made"


def test_a_port_in_use_is_one_line_saying_what_to_do(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {**os.environ, "SANDBOX_AGENT_HOME": str(tmp_path)}
        done = subprocess.run(
            [sys.executable, "-m", "sandbox_agent", "serve", "--port", str(port)],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"127.0.0.1:{port} is in use" in done.stderr
    assert "--port 0" in done.stderr


def test_a_port_out_of_range_is_refused(tmp_path: Path) -> None:
    env = {**os.environ, "SANDBOX_AGENT_HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "sandbox_agent", "serve", "--port", "65536"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "0-65535" in done.stderr


def test_a_head_timeout_out_of_range_names_its_flag(tmp_path: Path) -> None:
    env = {**os.environ, "SANDBOX_AGENT_HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "sandbox_agent", "serve", "--port", "0", "--head-timeout", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("sandbox-agent serve: --head-timeout:"), done.stderr


def _refused_start(home: Path, *flags: str) -> str:
    env = {**os.environ, "SANDBOX_AGENT_HOME": str(home)}
    done = subprocess.run(
        [sys.executable, "-m", "sandbox_agent", "serve", "--port", "0", *flags],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    return done.stderr


def test_a_repo_root_that_is_a_link_is_refused_at_start_naming_its_real_path(
    tmp_path: Path,
) -> None:
    (tmp_path / "repos").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "repos")
    error = _refused_start(tmp_path / "home", "--repo-root", str(tmp_path / "link"))
    assert error.startswith("sandbox-agent serve: --repo-root: "), error
    assert f"give {tmp_path / 'repos'}" in error


def test_a_repo_root_holding_the_token_or_the_state_is_refused_at_start(tmp_path: Path) -> None:
    (tmp_path / "repos").mkdir()
    token = ["--token-file", str(tmp_path / "repos" / "token")]
    error = _refused_start(tmp_path / "home", "--repo-root", str(tmp_path / "repos"), *token)
    assert "overlaps the service's own state" in error
    error = _refused_start(tmp_path / "home", "--repo-root", str(tmp_path))
    assert "overlaps the service's own state" in error


def test_an_unknown_provider_or_a_bad_maximum_is_refused_at_start(tmp_path: Path) -> None:
    error = _refused_start(tmp_path, "--provider", "gpt-9")
    assert error.startswith("sandbox-agent serve: --provider: unknown provider 'gpt-9'"), error
    assert "local" in error
    error = _refused_start(tmp_path, "--max-run-iterations", "0")
    assert error.startswith("sandbox-agent serve: --max-run-iterations:"), error


def test_serve_help_shows_every_flag_with_its_default() -> None:
    import argparse

    from sandbox_agent.commands import serve

    parser = argparse.ArgumentParser()
    serve.add_arguments(parser)
    for action in parser._actions:
        if action.dest != "help":
            assert "default" in str(action.help), action.option_strings
    done = subprocess.run(
        [sys.executable, "-m", "sandbox_agent", "serve", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    text = " ".join(done.stdout.split())
    for shown in [
        "--max-run-iterations N the most a request may ask for: model turns (default 50)",
        "--max-run-wall-seconds SECONDS the most a request may ask for: wall clock of one run "
        "(default 1800.0)",
        "--max-run-candidates N the most a request may ask for: repair: first-round "
        "candidates (default 10)",
        "--repo-root DIR let a run request name a folder under DIR by path",
    ]:
        assert shown in text, shown
    assert "local" in text.split("real: ", 1)[1].split(";", 1)[0]


def test_serve_takes_repo_roots_and_maxima_into_what_it_offers(tmp_path: Path) -> None:
    (tmp_path / "repos" / "proj").mkdir(parents=True)
    (tmp_path / "repos" / "proj" / "x.py").write_text("x = 1\n")
    env = {**os.environ, "SANDBOX_AGENT_HOME": str(tmp_path / "home")}
    command = [
        sys.executable, "-m", "sandbox_agent", "serve", "--port", "0",
        "--repo-root", str(tmp_path / "repos"), "--max-run-iterations", "5",
        "--provider", "scripted", "--provider", "local",
    ]  # fmt: skip
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert process.stdout is not None
        while (match := URL_LINE.match(line := process.stdout.readline())) is None:
            assert line, "serve ended without printing its URL"
        token = (tmp_path / "home" / "service" / "token").read_text().strip()
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=match.group(1), headers=headers, timeout=30) as client:
            offered = client.get("/fixtures").json()
            assert offered["repo_roots"] == [str(tmp_path / "repos")]
            assert offered["maxima"]["max_iterations"] == 5
            assert offered["default_provider"] == "local"
            over = client.post(
                "/runs",
                json={"repo": str(tmp_path / "repos" / "proj"), "task": "t",
                      "budgets": {"max_iterations": 6}},
            )  # fmt: skip
            assert over.status_code == 422
            assert "serve --max-run-iterations" in over.json()["detail"]
            outside = client.post("/runs", json={"repo": str(tmp_path), "task": "t"})
            assert outside.status_code == 422
            assert "serve --repo-root DIR" in outside.json()["detail"]
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=30)


def test_sr13_f9_a_bad_real_model_flag_is_refused_at_start_naming_it(tmp_path: Path) -> None:
    error = _refused_start(
        tmp_path, "--provider", "openai", "--model", "m", "--price-per-mtok-in", "-1"
    )
    assert error.startswith("sandbox-agent serve: --price-per-mtok-in:"), error
    assert "\n" not in error.strip()
