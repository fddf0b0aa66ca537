"""PID 1: ``/usr/bin/python3 -I -B -m sandbox_supervisor``, its config on stdin.

Order: undumpable, no signal handler, read the config frame from stdin
(``protocol.KIND_CONFIG``, within ``protocol.CONFIG_TIMEOUT_S``), parse it, attest,
write ``A``; for the
trusted runner, import what it imports first (``launch.warm_runner``); only when every
check passed and the host then sent its go (``protocol.GO`` on stdin, within
``go_timeout_s``), fork the workload and relay; write ``X`` last; exit with
``protocol.pid1_exit_code`` of the workload's exit code. Exit codes of PID 1 itself,
when no ``X`` frame was written: ``EXIT_REFUSED`` (125) for a bad config, a failed
attestation or no go; ``EXIT_SUPERVISOR_ERROR`` (126) for its own crash (text on
stderr).
"""

from __future__ import annotations

# Every module imported here is paid for on every sandbox run, before attestation can
# start (issue 3: PID 1's start-up was most of the verified run's overhead). So:
# ``_signal`` (built in, integer constants) instead of ``signal`` (enum set-up),
# ``traceback`` only when PID 1 crashes, no pathlib/typing/dataclasses anywhere on
# this path. tests/supervisor/test_supervisor_imports.py keeps the set small.
import ctypes
import math
import os
import select
import sys
import time

from sandbox_supervisor import attest, cgroup, identity, inside, launch, protocol, syscalls, wire
from sandbox_supervisor.config import PROTOCOL_VERSION, ConfigError, parse_config
from sandbox_supervisor.config import read_nonce as read_config_nonce
from sandbox_supervisor.relay import Relay

TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal as _signal
    from collections.abc import Callable
    from typing import NoReturn

    from sandbox_supervisor.config import Config
    from sandbox_supervisor.relay import Drop

    Attester = Callable[[Config], list[attest.Check]]
else:
    import _signal  # no stub of its own; the same names as signal's

EXIT_REFUSED = 125
EXIT_SUPERVISOR_ERROR = 126
PR_SET_DUMPABLE = 4
MAX_CRASH_TEXT = 4096
CGROUP_ROOT = "/sys/fs/cgroup"
PROC_ROOT = "/proc"


def _make_undumpable() -> None:
    if syscalls.libc().prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0) failed")


def _initial_environ() -> bytes | None:
    try:
        return inside.read_environ_bytes(PROC_ROOT)
    except OSError:
        return None  # the environment check then fails, saying why


def _attestation(nonce: str, runtime: str | None, checks: list[attest.Check]) -> dict[str, object]:
    return {
        "type": "attestation",
        "v": PROTOCOL_VERSION,
        "nonce": nonce,
        "runtime": runtime,
        "ok": bool(checks) and all(check.ok for check in checks),
        "checks": [check._asdict() for check in checks],
    }


def supervise(
    config_text: str,
    out_fd: int,
    *,
    attester: Attester | None = None,
    read_oom: Callable[[], int | None] = lambda: cgroup.oom_kills(CGROUP_ROOT),
    go_fd: int = 0,
    drop: Drop = identity.drop_to,
) -> int:
    """Everything after process set-up: returns PID 1's exit code.

    ``attester``, ``read_oom``, ``go_fd`` and ``drop`` are parameters so the host tests
    can run the relay and the framing for real without being PID 1 of a container
    (``drop``: how each workload process leaves PID 1's uid; a host test as another
    user cannot change uid).

    Raises:
        OSError: writing to ``out_fd`` failed (the host went away).
    """
    try:
        config = parse_config(config_text)
    except ConfigError as error:
        nonce = read_config_nonce(config_text)
        if nonce is not None:
            check = attest.Check("config", False, str(error)[:500])
            wire.write_record(out_fd, protocol.KIND_ATTESTATION, _attestation(nonce, None, [check]))
        print(f"sandbox_supervisor: bad config: {error}", file=sys.stderr)
        return EXIT_REFUSED
    checks = attest.attest(config) if attester is None else attester(config)
    record = _attestation(config.nonce, config.runtime, checks)
    wire.write_record(out_fd, protocol.KIND_ATTESTATION, record)
    attested_at = time.monotonic()
    if not record["ok"]:
        return EXIT_REFUSED
    if launch.should_warm(config):
        launch.warm_runner(config.argv)  # while the host checks the record and decides
    why = await_go(go_fd, config.go_timeout_s, since=attested_at)
    if why is not None:
        print(f"sandbox_supervisor: no go from the host ({why}); nothing was run", file=sys.stderr)
        return EXIT_REFUSED
    fields = Relay(config, out_fd, read_oom=read_oom, drop=drop).run()
    exit_record = {"type": "exit", "v": PROTOCOL_VERSION, "nonce": config.nonce, **fields}
    wire.write_record(out_fd, protocol.KIND_EXIT, exit_record)
    return protocol.pid1_exit_code(int(fields["exit_code"]))


def await_go(fd: int, timeout_s: float, *, since: float | None = None) -> str | None:
    """Wait for the host's go on ``fd`` until ``timeout_s`` after ``since`` (a monotonic
    time, the attestation's; now by default): ``None`` once it came, else why it did not.
    A go already waiting is taken even when that time has passed (it came in time)."""
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP)
    deadline = (time.monotonic() if since is None else since) + timeout_s
    while not poller.poll(max(math.ceil((deadline - time.monotonic()) * 1000), 0)):
        if time.monotonic() >= deadline:
            return f"none within {timeout_s:g} s"
    try:
        data = os.read(fd, len(protocol.GO))
    except OSError as error:
        return f"stdin unreadable: {error.strerror}"
    if data == protocol.GO:
        return None
    return "stdin closed" if not data else f"unexpected byte {data[:1]!r}"


def read_config(fd: int, timeout_s: float) -> str | None:
    """The config frame's payload from ``fd`` (PID 1's stdin), exactly that many bytes
    (the go byte that follows later stays unread); None, saying why on stderr, when it
    is not a config frame, too long, not UTF-8, or not whole within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    header = _read_exactly(fd, protocol.HEADER.size, deadline)
    if header is None:
        return None
    kind, length = protocol.HEADER.unpack(header)
    if kind != protocol.KIND_CONFIG or length > protocol.MAX_CONFIG_BYTES:
        print(f"sandbox_supervisor: not a config frame ({kind!r}, {length} bytes)", file=sys.stderr)
        return None
    payload = _read_exactly(fd, length, deadline)
    if payload is None:
        return None
    try:
        return payload.decode("utf-8")
    except UnicodeDecodeError:
        print("sandbox_supervisor: the config is not UTF-8", file=sys.stderr)
        return None


def _read_exactly(fd: int, size: int, deadline: float) -> bytes | None:
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP)
    data = bytearray()
    while len(data) < size:
        wait_ms = max(math.ceil((deadline - time.monotonic()) * 1000), 0)
        if not poller.poll(wait_ms):
            if time.monotonic() < deadline:
                continue
            print("sandbox_supervisor: no whole config on stdin in time", file=sys.stderr)
            return None
        chunk = os.read(fd, size - len(data))
        if not chunk:
            print("sandbox_supervisor: stdin closed before the config was whole", file=sys.stderr)
            return None
        data += chunk
    return bytes(data)


def main(argv: list[str] | None = None) -> int:
    """PID 1's entry point: process set-up, then ``supervise`` on stdout."""
    args = sys.argv[1:] if argv is None else argv
    try:
        environ = _initial_environ()
        _make_undumpable()
        # Python's own SIGINT handler is the only one it installs; without any handler
        # the kernel drops the signals that processes in the container send PID 1.
        _signal.signal(_signal.SIGINT, _signal.SIG_DFL)
        if args:
            print("usage: python3 -I -B -m sandbox_supervisor (config on stdin)", file=sys.stderr)
            return EXIT_REFUSED
        config_text = read_config(0, protocol.CONFIG_TIMEOUT_S)
        if config_text is None:
            return EXIT_REFUSED
        where = inside.Inside(environ=environ)
        return supervise(
            config_text, sys.stdout.fileno(), attester=lambda config: attest.attest(config, where)
        )
    except Exception:
        import traceback  # only PID 1's own crash needs it; importing it costs every run

        sys.stderr.write(traceback.format_exc()[-MAX_CRASH_TEXT:])
        return EXIT_SUPERVISOR_ERROR


def exit_now(code: int) -> NoReturn:
    """End PID 1 with ``code`` without the interpreter's finalization.

    Finalization (module teardown, GC) cost ~6 ms under runc and ~15 ms under gVisor
    at the end of every run (issue 3), and does nothing PID 1 needs: its own code
    registers no ``atexit`` handler (the runner's imports made ahead may, e.g.
    ``logging.shutdown`` for pytest; they are for the forked runner, which runs them),
    its frames are written unbuffered with ``os.write``, and the only buffered text
    (stderr) is flushed here.
    """
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            continue  # the reader is gone or the stream closed: nothing left to save
    os._exit(code)


if __name__ == "__main__":
    exit_now(main())
