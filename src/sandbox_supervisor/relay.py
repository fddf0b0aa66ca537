"""Run the workload: fork it, relay its output within an exact budget, enforce the deadline.

PID 1 installs no signal handlers, so nothing here waits for SIGCHLD: the loop waits
on the workload's pipes with a short timeout and looks for its exit with
``waitid(WNOWAIT)``, which sees the exit without reaping, so the process group can
still be killed safely before the leader's pid is released.
"""

from __future__ import annotations

# Start-up cost is per sandbox run (issue 3), so PID 1 avoids modules it can do
# without: ``select.poll`` (built in) instead of ``selectors``, ``_signal``'s integer
# constants instead of ``signal`` (whose enums cost more to build than the whole relay
# needs), plain classes instead of dataclasses, and no runtime ``typing``.
import fcntl
import math
import os
import select
import sys
import time

from sandbox_supervisor import launch, protocol, reaper, wire
from sandbox_supervisor.runner_report import parse_runner_report

TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal as _signal
    from collections.abc import Callable
    from typing import Any, NoReturn

    from sandbox_supervisor.config import Config
else:
    import _signal  # no stub of its own; the same names as signal's

READ_CHUNK = protocol.MAX_FRAME_PAYLOAD
EXIT_POLL_S = 0.05
"""How long a wait on open pipes lasts before looking for the workload's exit again."""
EXIT_POLL_NO_PIPES_S = 0.001
"""The same once every pipe is closed: the exit is then due within microseconds."""
DRAIN_AFTER_EXIT_S = 1.0
"""After the workload exits and the rest is killed, how long pipes may stay open."""
EXEC_FAILED_EXIT = 127


class _Run:
    __slots__ = (
        "budget",
        "end",
        "killed",
        "pid",
        "relayed",
        "report",
        "report_overflow",
        "start",
        "status",
        "timed_out",
        "truncated",
    )

    def __init__(self, pid: int, start: float, budget: int) -> None:
        self.pid = pid
        self.start = start
        self.budget = budget
        self.relayed = 0
        self.truncated = False
        self.timed_out = False
        self.killed = False
        self.status: int | None = None
        self.end = 0.0
        self.report = bytearray()
        self.report_overflow = False


def _become_workload(
    config: Config, stdout_w: int, stderr_w: int, report_w: int, *, fork_only: bool
) -> NoReturn:
    """In the forked child: become the workload, or exit 127 saying why on stderr.

    ``fork_only``: the trusted runner, run in this interpreter (``launch``), not exec'd.
    """
    try:
        os.setsid()
        sources = [os.open(os.devnull, os.O_RDONLY), stdout_w, stderr_w, report_w]
        # Copy every source above the targets first, so no dup2 overwrites one still needed.
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD, protocol.RUNNER_REPORT_FD + 1) for fd in sources]
        for target, fd in enumerate(high):
            os.dup2(fd, target, inheritable=True)
        os.closerange(protocol.RUNNER_REPORT_FD + 1, os.sysconf("SC_OPEN_MAX"))
        os.chdir(config.cwd)
        if fork_only:
            launch.run_in_process(config)
        for signum in (_signal.SIGPIPE, _signal.SIGXFSZ):
            _signal.signal(signum, _signal.SIG_DFL)  # Python ignores these; exec keeps ignores
        os.execvpe(config.argv[0], config.argv, config.workload_env)  # noqa: S606
    except BaseException as error:
        message = f"sandbox_supervisor: cannot run {config.argv[0]!r}: {error}\n"
        try:
            os.write(2, message.encode("utf-8", "replace"))
        finally:
            launch._exit(EXEC_FAILED_EXIT)  # bound before any workload code could replace it


def _exit_code(status: int) -> tuple[int, int | None]:
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        return 128 + signum, signum
    return os.WEXITSTATUS(status), None


class Relay:
    """One workload run, from fork to the exit report's fields."""

    def __init__(
        self,
        config: Config,
        out_fd: int,
        *,
        read_oom: Callable[[], int | None] = lambda: None,
        getpid: reaper.GetPid = os.getpid,
    ) -> None:
        self._config = config
        self._out_fd = out_fd
        self._read_oom = read_oom
        self._getpid = getpid
        self._poll = select.poll()
        self._pipes: dict[int, bytes | None] = {}
        """Open read ends: fd -> frame kind (None: the runner-report pipe)."""

    def run(self) -> dict[str, Any]:
        """Fork, relay and reap; the fields of the exit report (without type, v, nonce)."""
        oom_before = self._read_oom()
        fork_only = launch.in_process(self._config.argv, self._config.workload_env)
        for stream in (sys.stdout, sys.stderr):
            stream.flush()  # nothing buffered in PID 1 may reach the child's copy
        pipes = [os.pipe() for _ in range(3)]
        start = time.monotonic()
        pid = os.fork()
        if pid == 0:
            _become_workload(
                self._config, pipes[0][1], pipes[1][1], pipes[2][1], fork_only=fork_only
            )
        for (read_end, write_end), kind in zip(
            pipes, (protocol.KIND_STDOUT, protocol.KIND_STDERR, None), strict=True
        ):
            os.close(write_end)
            os.set_blocking(read_end, False)
            self._poll.register(read_end, select.POLLIN)
            self._pipes[read_end] = kind
        run = _Run(pid=pid, start=start, budget=self._config.output_budget)
        try:
            self._loop(run)
        finally:
            for fd in list(self._pipes):
                self._close(fd)
            if run.status is None:
                self._finish(run)
        oom_after = self._read_oom()
        exit_code, signum = _exit_code(run.status if run.status is not None else 0)
        report, report_error = parse_runner_report(bytes(run.report), overflow=run.report_overflow)
        delta = None if oom_before is None or oom_after is None else oom_after - oom_before
        return {
            "launch": "fork" if fork_only else "exec",
            "exit_code": exit_code,
            "signal": signum,
            "timed_out": run.timed_out,
            "output_bytes": run.relayed,
            "output_truncated": run.truncated,
            "duration_ms": round((run.end - run.start) * 1000, 1),
            "oom_kills_delta": delta,
            "runner_report": report,
            "runner_report_error": report_error,
        }

    def _loop(self, run: _Run) -> None:
        term_at = run.start + self._config.deadline_s
        kill_at = term_at + self._config.kill_grace_s
        drain_until = 0.0
        while True:
            now = time.monotonic()
            if run.status is None and self._exited(run.pid):
                self._finish(run)
                drain_until = time.monotonic() + DRAIN_AFTER_EXIT_S
            reaper.reap_orphans(getpid=self._getpid, keep=run.pid if run.status is None else None)
            pipes_open = bool(self._pipes)
            if run.status is not None and (not pipes_open or now >= drain_until):
                return
            waiting = run.status is None and not run.killed
            if waiting and not run.timed_out and now >= term_at:
                run.timed_out = True
                reaper.signal_workload(run.pid, _signal.SIGTERM)
            if waiting and run.timed_out and now >= kill_at:
                self._kill(run)
            wake = [EXIT_POLL_S if pipes_open else EXIT_POLL_NO_PIPES_S]
            if run.status is not None:
                wake.append(drain_until - now)
            elif not run.killed:
                wake.append((kill_at if run.timed_out else term_at) - now)
            timeout = max(0.0, min(wake))
            if not pipes_open:
                time.sleep(timeout)
                continue
            # Rounded up to whole milliseconds, as ``selectors`` does: never wake early.
            for fd, _ in self._poll.poll(math.ceil(timeout * 1000)):
                if fd in self._pipes:
                    self._read(run, fd, self._pipes[fd])

    def _exited(self, pid: int) -> bool:
        flags = os.WEXITED | os.WNOHANG | os.WNOWAIT
        return os.waitid(os.P_PID, pid, flags) is not None

    def _finish(self, run: _Run) -> None:
        """The workload has exited (or must now): kill what it left, then reap it."""
        reaper.kill_everything(run.pid, getpid=self._getpid)
        _, run.status = os.waitpid(run.pid, 0)
        run.end = time.monotonic()

    def _kill(self, run: _Run) -> None:
        run.killed = True
        reaper.kill_everything(run.pid, getpid=self._getpid)

    def _read(self, run: _Run, fd: int, kind: bytes | None) -> None:
        try:
            data = os.read(fd, READ_CHUNK)
        except BlockingIOError:
            return
        if not data:
            self._close(fd)
            return
        if kind is None:
            self._take_report(run, fd, data)
            return
        room = run.budget - run.relayed
        if len(data) > room:
            data = data[:room]
            if not run.truncated:
                run.truncated = True
                if run.status is None:
                    self._kill(run)
        if data:
            wire.write_data(self._out_fd, kind, data)
            run.relayed += len(data)

    def _take_report(self, run: _Run, fd: int, data: bytes) -> None:
        room = protocol.MAX_RUNNER_REPORT_BYTES - len(run.report)
        if len(data) > room:
            run.report_overflow = True
            self._close(fd)
            return
        run.report.extend(data)

    def _close(self, fd: int) -> None:
        self._poll.unregister(fd)
        del self._pipes[fd]
        os.close(fd)
