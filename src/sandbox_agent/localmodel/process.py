"""The server process: started detached, recognised by its command line, stopped as a group.

The server is started through a tiny launcher that forks a *waiter* in a new session
and exits as soon as the waiter says the server runs. So the server is nobody's child
here: it outlives the command that started it (it stays warm for the next run), and no
zombie is left when it dies under a long-lived ``serve``. The waiter is the server's
parent: it reaps it and appends how it ended (``exit status 1``, ``killed by signal 4
(SIGILL)``) to the log as one ``ENDED_MARK`` line with its pid, which a server that dies before
writing anything would otherwise not say. The server leads a process group of its own
(what ``stop_group`` signals); the waiter is outside it and ends after it. The server
gets an empty environment: ``llama-server`` reads ``LLAMA_ARG_*`` variables, and one
such as ``LLAMA_ARG_HOST`` or ``LLAMA_ARG_TOOLS`` in the caller's environment would
change what it exposes.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path

from sandbox_agent import ports, procstat

LOOPBACK = "127.0.0.1"
HEALTH_POLL_SECONDS = 0.25
STOP_GRACE_SECONDS = 10.0
LOG_TAIL_LINES = 5
ENDED_WAIT_SECONDS = 2.0
"""How long a dead server's waiter gets to log how it ended."""

ENDED_MARK = "[sandbox-agent] llama-server ended:"
"""The waiter's last line in the log, followed by how the server ended."""

_LAUNCHER = """
import os, signal, subprocess, sys
log, mark, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
read_end, write_end = os.pipe()
if os.fork():
    os.close(write_end)
    with os.fdopen(read_end) as said:
        word = said.read()
    if not word.isdigit():
        print(word or 'the waiter died', file=sys.stderr)
        sys.exit(1)
    print(word)
    sys.exit(0)
os.close(read_end)
os.setsid()
null = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
try:
    with open(log, 'ab') as out:
        child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                 env={}, process_group=0, close_fds=True)
except OSError as error:
    os.write(write_end, (error.strerror or str(error)).encode())
    os._exit(1)
os.write(write_end, str(child.pid).encode())
os.close(write_end)
code = child.wait()
how = 'exit status %d' % code if code >= 0 else 'killed by signal %d (%s)' % (
    -code, signal.Signals(-code).name if -code in signal.valid_signals() else '?')
with open(log, 'a') as out:
    out.write('%s pid %d %s\\n' % (mark, child.pid, how))
os._exit(0)
"""


def spawn_detached(argv: Sequence[str], log: Path) -> int:
    """Start ``argv`` under a detached waiter, output appended to ``log``; its pid.

    Raises:
        OSError: the launcher could not start the program.
    """
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", _LAUNCHER, str(log), ENDED_MARK, *argv],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        env={},
    )
    if done.returncode != 0 or not done.stdout.strip().isdigit():
        raise OSError(errno.ENOEXEC, (done.stderr.strip().splitlines() or ["launch failed"])[-1])
    return int(done.stdout.strip())


def command_line(pid: int) -> list[str] | None:
    """The argv of a live process, None when it is gone (or a zombie)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    if not raw:
        return None
    return [part.decode(errors="replace") for part in raw.rstrip(b"\0").split(b"\0")]


def is_running(pid: int, binary: Path, key_file: Path) -> bool:
    """Whether ``pid`` is still our server: a process of this user, running that binary
    (first, or second after the interpreter of a script), with that key file. A reused
    pid that belongs to another program, or to another user whose process copies the
    server's command line, is not ours, and is never signalled nor trusted."""
    try:
        owner = os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return False
    argv = command_line(pid)
    return (
        owner == os.geteuid()
        and argv is not None
        and str(binary) in argv[:2]
        and str(key_file) in argv
    )


def started(pid: int, log: Path) -> bool:
    """Whether the server just spawned as ``pid`` (its output in ``log``) still runs.

    Only its waiter's ``ENDED_MARK`` line, or a pid that is gone or a zombie, says it
    ended. Its command line cannot: the waiter learns the pid when the exec has closed
    its close-on-exec pipe, before the kernel has laid out the new program's arguments,
    and until then ``/proc/<pid>/cmdline`` reads empty. Read as "not ours", that window
    had a healthy server stopped at start with no output, on a busy machine (CI, twice).
    """
    return how_it_ended(log, pid) is None and not procstat.is_gone_or_zombie(pid)


def stop_group(pid: int, *, grace: float = STOP_GRACE_SECONDS) -> None:
    """SIGTERM the server's process group, then SIGKILL it after ``grace`` seconds."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, sig)
        ends = time.monotonic() + wait
        while time.monotonic() < ends:
            if command_line(pid) is None:
                return
            time.sleep(0.05)


def port_in_use(port: int) -> bool:
    """Whether something already listens on (or holds) ``LOOPBACK:port``."""
    return not ports.bindable(LOOPBACK, port)


def health(base: str, *, timeout: float = 2.0) -> str:
    """``ok``, ``loading`` (503 while the model loads), or ``down``."""
    url = f"{base}/health"  # a loopback URL built here, never taken from input
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:  # noqa: S310
            body = json.loads(answer.read(4096) or b"{}")
    except urllib.error.HTTPError as error:
        error.close()
        return "loading" if error.code == 503 else "down"
    except (urllib.error.URLError, OSError, ValueError):
        return "down"
    return "ok" if isinstance(body, dict) and body.get("status") == "ok" else "down"


def wait_healthy(base: str, alive: Callable[[], bool], deadline: float) -> str:
    """Poll ``/health`` until ``ok``: ``exited`` if the process dies, else ``timeout``."""
    while time.monotonic() < deadline:
        if not alive():
            return "exited"
        if health(base) == "ok":
            return "ok"
        time.sleep(HEALTH_POLL_SECONDS)
    return "timeout"


def how_it_ended(log: Path, pid: int) -> str | None:
    """How the server ``pid`` ended, as its waiter logged it (``exit status 1``), if it
    has. A server before it in the same log (stopped, then replaced) has its own line,
    which its waiter may write after the next start has begun: the pid tells them apart."""
    said = f"{ENDED_MARK} pid {pid} "
    for line in reversed(_tail_text(log).splitlines()):
        if line.startswith(said):
            return line.removeprefix(said).strip()[:100]
    return None


def wait_ended(log: Path, pid: int, *, within: float = ENDED_WAIT_SECONDS) -> str | None:
    """``how_it_ended``, given the waiter ``within`` seconds to write it."""
    deadline = time.monotonic() + within
    while (ended := how_it_ended(log, pid)) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    return ended


def log_tail(log: Path, lines: int = LOG_TAIL_LINES) -> list[str]:
    """The last non-empty lines the server wrote to its log, each cut to 300 characters
    (the waiter's ``ENDED_MARK`` line left out: ``how_it_ended`` reads it)."""
    text = _tail_text(log)
    kept = [
        line.strip()[:300]
        for line in text.splitlines()
        if line.strip() and not line.startswith(ENDED_MARK)
    ]
    return kept[-lines:]


def _tail_text(log: Path) -> str:
    try:
        with log.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 16384))
            return handle.read().decode(errors="replace")
    except OSError:
        return ""
