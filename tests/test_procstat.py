"""sandbox_agent.procstat: one reader of /proc/<pid>/stat for every reaper and start."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from sandbox_agent import procstat


def test_a_live_an_ended_unreaped_and_a_reaped_process() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    try:
        assert not procstat.is_gone_or_zombie(child.pid)
        assert procstat.process_start_time(child.pid) is not None
        assert child.stdin is not None
        child.stdin.close()  # it ends; not reaped yet, it is a zombie
        deadline = time.monotonic() + 30
        while not procstat.is_gone_or_zombie(child.pid):
            assert time.monotonic() < deadline, "the child never ended"
            time.sleep(0.02)
        assert procstat.stat_fields(child.pid) is not None  # still listed, as Z
    finally:
        child.wait()
    assert procstat.is_gone_or_zombie(child.pid)
    assert procstat.stat_fields(child.pid) is None
    assert procstat.process_start_time(child.pid) is None


def test_this_process_start_time_is_stable() -> None:
    first = procstat.process_start_time(os.getpid())
    assert first is not None
    assert first.isdigit()
    assert procstat.process_start_time(os.getpid()) == first
