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

from sandbox_supervisor import identity, launch, protocol, reaper, wire
from sandbox_supervisor.runner_report import parse_runner_report

TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal as _signal
    from collections.abc import Callable
    from typing import Any, NoReturn

    from sandbox_supervisor.config import Config, Judge

    Drop = Callable[[int, int], None]
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


class _Child:
    """One process PID 1 forks: what it runs, as whom, where, and its descriptors
    (``sources[i]`` becomes fd ``i``; ``None`` is ``/dev/null``, opened in the child)."""

    __slots__ = ("argv", "cwd", "fork_only", "gid", "sources", "uid")

    def __init__(
        self,
        argv: list[str],
        cwd: str,
        uid: int,
        gid: int,
        sources: list[int | None],
        *,
        fork_only: bool = False,
    ) -> None:
        self.argv = argv
        self.cwd = cwd
        self.uid = uid
        self.gid = gid
        self.sources = sources
        self.fork_only = fork_only


def _become(child: _Child, config: Config, drop: Drop) -> NoReturn:
    """In the forked child: become ``child``, or exit 127 saying why on stderr.

    ``child.fork_only``: the trusted runner, run in this interpreter (``launch``), not
    exec'd. ``drop``: how the child leaves PID 1's identity (``identity.drop_to``)
    before anything else of it runs.
    """
    try:
        os.setsid()
        sources = [os.open(os.devnull, os.O_RDONLY) if fd is None else fd for fd in child.sources]
        # Copy every source above the targets first, so no dup2 overwrites one still needed.
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD, len(sources)) for fd in sources]
        for target, fd in enumerate(high):
            os.dup2(fd, target, inheritable=True)
        os.closerange(len(sources), os.sysconf("SC_OPEN_MAX"))
        _first_for_the_oom_killer()
        drop(child.uid, child.gid)
        os.chdir(child.cwd)
        if child.fork_only:
            launch.run_in_process(config)
        for signum in (_signal.SIGPIPE, _signal.SIGXFSZ):
            _signal.signal(signum, _signal.SIG_DFL)  # Python ignores these; exec keeps ignores
        os.execvpe(child.argv[0], child.argv, config.workload_env)  # noqa: S606
    except BaseException as error:
        message = f"sandbox_supervisor: cannot run {child.argv[0]!r}: {error}\n"
        try:
            os.write(2, message.encode("utf-8", "replace"))
        finally:
            launch._exit(EXEC_FAILED_EXIT)  # bound before any workload code could replace it


OOM_SCORE_ADJ_MAX = b"1000"


def _first_for_the_oom_killer() -> None:
    """Make this process, and all it starts, the OOM killer's first choice over PID 1.

    Found by an outside review (issue 15's red team): many processes each smaller than
    PID 1 filled the cgroup, the killer took the largest, PID 1, and the run had no exit
    report. Raising one's own score needs no privilege. The workload may lower it again
    (down to the container's start value, 0: only ``CAP_SYS_RESOURCE`` could set a floor),
    which only makes its own run fail closed again (``oom_killed``, no exit report), as
    it does where this file cannot be written."""
    try:
        with open("/proc/self/oom_score_adj", "wb", buffering=0) as score:
            score.write(OOM_SCORE_ADJ_MAX)
    except OSError:
        return


def _fork(child: _Child, config: Config, drop: Drop) -> int:
    pid = os.fork()
    if pid == 0:
        _become(child, config, drop)
    return pid


def _input_file(data: bytes) -> int:
    """An anonymous file holding ``data``, at offset 0 (the judge's input), with no
    permission for anyone: the judge reads it through the descriptor it is given.
    gVisor checks only the file's own mode when another process opens
    ``/proc/<judge>/fd/0``, and a memfd is made 0777: without the ``fchmod`` the
    candidate read the check's source, expected values included (found by
    tests/evals/test_heldout_forgery.py's leak probe under runsc)."""
    fd = os.memfd_create("judge-input", 0)
    os.fchmod(fd, 0)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


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
        drop: Drop = identity.drop_to,
    ) -> None:
        self._config = config
        self._drop = drop
        self._others: list[int] = []
        """Processes forked besides the workload (a held-out check's candidate)."""
        self._out_fd = out_fd
        self._read_oom = read_oom
        self._getpid = getpid
        self._poll = select.poll()
        self._pipes: dict[int, bytes | None] = {}
        """Open read ends: fd -> frame kind (None: the runner-report pipe)."""

    def run(self) -> dict[str, Any]:
        """Fork, relay and reap; the fields of the exit report (without type, v, nonce)."""
        config = self._config
        oom_before = self._read_oom()
        fork_only = config.judge is None and launch.in_process(config.argv, config.workload_env)
        for stream in (sys.stdout, sys.stderr):
            stream.flush()  # nothing buffered in PID 1 may reach the child's copy
        pipes = [os.pipe() for _ in range(3)]
        out_w, err_w, report_w = (write_end for _, write_end in pipes)
        start = time.monotonic()
        if config.judge is None:
            workload = _Child(
                config.argv,
                config.cwd,
                config.workload_uid,
                config.workload_gid,
                [None, out_w, err_w, report_w],
                fork_only=fork_only,
            )
            pid = _fork(workload, config, self._drop)
        else:
            pid = self._fork_judge_and_candidate(config.judge, out_w, err_w, report_w)
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

    def _fork_judge_and_candidate(self, judge: Judge, out_w: int, err_w: int, report_w: int) -> int:
        """A held-out check (issue 15): the judge, which runs the check and is the run's
        workload, and the candidate, the code under test, which the judge reaches only
        through two pipes. Each its own uid: the candidate cannot open the judge's
        descriptors (its report pipe among them), read its memory or signal it."""
        config = self._config
        requests, answers = os.pipe(), os.pipe()
        judge_input = _input_file(judge.input.encode("utf-8"))
        candidate = _Child(
            judge.candidate_argv,
            config.cwd,
            config.workload_uid,
            config.workload_gid,
            [None, out_w, err_w, requests[0], answers[1]],
        )
        judge_child = _Child(
            config.argv,
            "/",
            judge.uid,
            judge.gid,
            [judge_input, out_w, err_w, report_w, requests[1], answers[0]],
        )
        try:
            self._others.append(_fork(candidate, config, self._drop))
            return _fork(judge_child, config, self._drop)
        finally:
            for fd in (*requests, *answers, judge_input):
                os.close(fd)

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
        if not reaper.is_pid1(self._getpid):
            # As PID 1, kill_everything reached the candidate and the loop reaps it;
            # anywhere else (the host tests) it is still ours to end and reap.
            for pid in self._others:
                reaper.signal_workload(pid, _signal.SIGKILL)
                os.waitpid(pid, 0)
        self._others.clear()

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
