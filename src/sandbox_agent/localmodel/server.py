"""The local model server's lifecycle: start on demand, keep warm, report, stop.

One server per state home, described by ``server.json`` in ``paths.server_dir()``.
It listens on loopback only and needs a key generated at each start and kept in a
0600 file (a server started with ``--port`` and no key answers anyone on the
machine). Starting, stopping and the check in between hold an ``flock`` on
``server.lock``, so concurrent runs never start two servers. A start that fails
(the process exits, or ``/health`` is not ``ok`` by the deadline) stops what it
started and says why in one line, with the server's last log line.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import secrets
import time
from collections.abc import Iterator
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from sandbox_agent import ports
from sandbox_agent.errors import SetupError
from sandbox_agent.localmodel import paths, pins, process
from sandbox_agent.localmodel.build import BuildRecord, build_options, find_build
from sandbox_agent.localmodel.fetch import check_model

DEFAULT_CONTEXT_TOKENS = 8192
"""``--context-tokens``: the server's context window (the model supports 32,768)."""
MIN_CONTEXT_TOKENS = 1024
DEFAULT_START_TIMEOUT_SECONDS = 120.0
"""``--start-timeout``: from launch to a healthy ``/health`` (about 3 s here when warm)."""
RECORD_FILE = "server.json"
KEY_FILE = "api-key"
LOG_FILE = "server.log"
LOCK_FILE = "server.lock"


class ServerSettings(BaseModel):
    """How to start the server; each field has a ``model start`` flag."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    context_tokens: int = Field(DEFAULT_CONTEXT_TOKENS, ge=MIN_CONTEXT_TOKENS, le=131072)
    """The context window, in tokens, of the one slot."""
    threads: int = Field(default_factory=lambda: os.cpu_count() or 1, ge=1, le=256)
    """Threads for prompt processing and generation (default: the machine's cores)."""
    port: int = Field(0, ge=0, le=65535)
    """Loopback port; 0 picks a free one."""
    start_timeout_seconds: float = Field(DEFAULT_START_TIMEOUT_SECONDS, gt=0, le=3600)


class ServerRecord(BaseModel):
    """A started server, as written to ``server.json``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pid: int
    port: int
    binary: str
    model_path: str
    api_key_file: str
    log_file: str
    context_tokens: int
    threads: int
    server_version: str
    started_at: str

    @property
    def root(self) -> str:
        return f"http://{process.LOOPBACK}:{self.port}"


class ServerStatus(BaseModel):
    """``sandbox-agent model status --json``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    running: bool
    base_url: str | None
    """OpenAI-compatible, ending in ``/v1``."""
    anthropic_base_url: str | None
    """For the Anthropic SDK (it adds ``/v1/messages`` itself)."""
    model: str
    sha256: str
    server_version: str | None
    api_key_file: str | None
    pid: int | None
    context_tokens: int | None
    log_file: str | None
    model_path: str
    license: str = pins.MODEL_LICENSE


def _record_path() -> Path:
    return paths.server_dir() / RECORD_FILE


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    folder = paths.server_dir()
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    with (folder / LOCK_FILE).open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def read_record() -> ServerRecord | None:
    """The record of the last start, if any (it may describe a server that has died)."""
    try:
        return ServerRecord.model_validate_json(_record_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def alive(record: ServerRecord) -> bool:
    """Whether the recorded server process still runs (and is ours)."""
    return process.is_running(record.pid, Path(record.binary), Path(record.api_key_file))


def status() -> ServerStatus:
    """What runs now; ``running`` only when the process is ours and ``/health`` is ok."""
    record = read_record()
    if record is None or not alive(record):
        found = find_build(paths.builds_dir(), build_options())
        return ServerStatus(
            running=False,
            base_url=None,
            anthropic_base_url=None,
            model=pins.MODEL_NAME,
            sha256=pins.MODEL_SHA256,
            server_version=None if found is None else found[1].server_version,
            api_key_file=None,
            pid=None,
            context_tokens=None,
            log_file=None if record is None else record.log_file,
            model_path=str(paths.model_path()),
        )
    healthy = process.health(record.root) == "ok"
    return ServerStatus(
        running=healthy,
        base_url=f"{record.root}/v1",
        anthropic_base_url=record.root,
        model=pins.MODEL_NAME,
        sha256=pins.MODEL_SHA256,
        server_version=record.server_version,
        api_key_file=record.api_key_file,
        pid=record.pid,
        context_tokens=record.context_tokens,
        log_file=record.log_file,
        model_path=record.model_path,
    )


def ensure_running(settings: ServerSettings | None = None) -> ServerRecord:
    """The running server, started now if none is (``settings`` apply to a new start only).

    Raises:
        SetupError: the server or model is missing (run ``make model``), the port is
            busy, or the server did not come up (the last log line says why).
    """
    with _locked():
        record = read_record()
        if record is not None and alive(record) and process.health(record.root) == "ok":
            return record
        return _start(settings or ServerSettings(), record)


def start(settings: ServerSettings) -> ServerRecord:
    """Start the server, replacing one that runs (to apply new settings).

    Raises:
        SetupError: as for ``ensure_running``.
    """
    with _locked():
        return _start(settings, read_record())


def stop() -> bool:
    """Stop the server; whether one was running. Its key and record are removed."""
    with _locked():
        return _stop(read_record())


def _stop(record: ServerRecord | None) -> bool:
    if record is None:
        return False
    running = alive(record)
    if running:
        process.stop_group(record.pid)
    _record_path().unlink(missing_ok=True)
    # Only the key this folder holds: a record naming another file never deletes it.
    (paths.server_dir() / KEY_FILE).unlink(missing_ok=True)
    return running


def _installed() -> tuple[Path, BuildRecord, Path]:
    found = find_build(paths.builds_dir(), build_options())
    if found is None:
        raise SetupError(
            f"llama-server is not built in {paths.builds_dir()} ({paths.cache_origin()}): "
            "run 'make model' first"
        )
    model = paths.model_path()
    check_model(model)
    return found[0], found[1], model


def _start(settings: ServerSettings, previous: ServerRecord | None) -> ServerRecord:
    binary, build, model = _installed()
    _stop(previous)
    if settings.port and process.port_in_use(settings.port):
        raise SetupError(
            f"port {settings.port} on {process.LOOPBACK} is in use: choose another --port, "
            "or leave it out for any free one"
        )
    folder = paths.server_dir()
    key_file = folder / KEY_FILE
    _write_key(key_file)
    log = folder / LOG_FILE
    log.write_bytes(b"")
    os.chmod(log, 0o600)
    # A port can still be taken between the probe and the server's bind, by a program that
    # binds that very number (ports.py keeps outgoing connections off it): one more try.
    for attempt in (1, 2):
        port = settings.port or ports.free_port(process.LOOPBACK)
        record = ServerRecord(
            pid=0,
            port=port,
            binary=str(binary),
            model_path=str(model),
            api_key_file=str(key_file),
            log_file=str(log),
            context_tokens=settings.context_tokens,
            threads=settings.threads,
            server_version=build.server_version,
            started_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        )
        try:
            pid = process.spawn_detached(server_argv(record), log)
        except OSError as error:
            raise SetupError(
                f"cannot start {binary} ({error.strerror}): run 'make model'"
            ) from None
        record = record.model_copy(update={"pid": pid})
        deadline = time.monotonic() + settings.start_timeout_seconds
        running = functools.partial(process.started, pid, log)
        outcome = process.wait_healthy(record.root, running, deadline)
        if outcome == "ok":
            if alive(record):
                _write_record(record)
                return record
            process.stop_group(pid)
            raise SetupError(
                f"something else answers on port {port}, and the process started there is not "
                f"the model server: see {log}"
            )
        if outcome != "exited":
            process.stop_group(pid)  # our own child's group, not yet reaped by its waiter
        tail = process.log_tail(log)
        last = tail[-1] if tail else "no output"
        if outcome == "exited" and attempt == 1 and not settings.port and _bind_failed(tail):
            continue
        key_file.unlink(missing_ok=True)
        if outcome == "timeout":
            raise SetupError(
                f"the model server was not ready within {settings.start_timeout_seconds:g} s "
                f"(stopped; last log line: {last}); see {log}"
            )
        ended = process.wait_ended(log, pid) or "how, unknown"
        raise SetupError(
            f"the model server exited at start ({ended}; last log line: {last}); see {log}"
        )
    raise AssertionError("unreachable")  # pragma: no cover


def _bind_failed(tail: list[str]) -> bool:
    text = " ".join(tail).lower()
    return "bind" in text or "address already in use" in text


def server_argv(record: ServerRecord) -> list[str]:
    """The server's command line: loopback, the key file, one slot, no web UI."""
    return [
        record.binary,
        "--model",
        record.model_path,
        "--alias",
        pins.MODEL_NAME,
        "--host",
        process.LOOPBACK,
        "--port",
        str(record.port),
        "--api-key-file",
        record.api_key_file,
        "--jinja",
        "--ctx-size",
        str(record.context_tokens),
        "--parallel",
        "1",
        "--threads",
        str(record.threads),
        "--threads-batch",
        str(record.threads),
        "--no-webui",
        "--no-slots",
    ]


def _write_key(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(secrets.token_urlsafe(32) + "\n")
    os.replace(temporary, path)


def read_key(record: ServerRecord) -> str:
    """The server's API key (keep it out of logs, traces and messages).

    Raises:
        SetupError: the key file is gone or unreadable.
    """
    try:
        return Path(record.api_key_file).read_text(encoding="utf-8").strip()
    except OSError:
        raise SetupError(
            "the model server's key file is gone: run 'sandbox-agent model stop' then retry"
        ) from None


def _write_record(record: ServerRecord) -> None:
    path = _record_path()
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    temporary.write_text(record.model_dump_json(indent=2), encoding="utf-8")
    os.replace(temporary, path)
