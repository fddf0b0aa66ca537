"""The kill(-1) guard: these tests run as root on the host, where kill(-1, SIGKILL) would
end every process on the machine."""

from __future__ import annotations

import os
import signal
import time

from sandbox_supervisor import reaper


def test_the_test_process_is_not_pid1() -> None:
    assert os.getpid() != 1
    assert not reaper.is_pid1()


def test_kill_everything_spares_the_machine_when_not_pid1() -> None:
    calls: list[tuple[int, int]] = []
    reaper.kill_everything(4242, getpid=lambda: 777, kill=lambda p, s: calls.append((p, s)))
    assert calls == [(-4242, signal.SIGKILL), (4242, signal.SIGKILL)]


def test_kill_everything_kills_all_as_pid1() -> None:
    calls: list[tuple[int, int]] = []
    reaper.kill_everything(4242, getpid=lambda: 1, kill=lambda p, s: calls.append((p, s)))
    assert (-1, signal.SIGKILL) in calls


def test_kill_everything_with_real_kill_only_hits_the_group() -> None:
    child = os.fork()
    if child == 0:
        os.setsid()
        time.sleep(30)
        os._exit(0)
    time.sleep(0.05)
    reaper.kill_everything(child)  # real getpid and kill: no kill(-1) here
    _, status = os.waitpid(child, 0)
    assert os.WTERMSIG(status) == signal.SIGKILL


def test_reap_orphans_leaves_other_peoples_children_alone() -> None:
    child = os.fork()
    if child == 0:
        os._exit(5)
    # Exited but not reaped (WNOWAIT), so reap_orphans really has a zombie to leave alone;
    # a fixed sleep let it run before the exit and pass without testing anything.
    os.waitid(os.P_PID, child, os.WEXITED | os.WNOWAIT)
    reaper.reap_orphans()
    _, status = os.waitpid(child, 0)  # still ours to reap
    assert os.WEXITSTATUS(status) == 5
