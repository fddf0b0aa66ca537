"""A local cluster: a head and two workers, each its own ``ray start`` on loopback.

Ray turns ``127.0.0.1`` into the machine's network address, so each node gets its own
loopback address instead (``127.0.0.2`` head, ``.3`` and ``.4`` workers) and every
port is chosen free on that address: nothing of the cluster is reached through
another interface, and two clusters on one machine do not collide. Each node runs
in its own session (``setsid``), so its process group holds every process Ray starts
for it (GCS, raylet, agents, workers): stopping a node is ``killpg`` of that group,
never ``ray stop`` (which stops every Ray process of the machine, other people's too).
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from sandbox_agent.cluster.node import DEFAULT_SLOTS, RayStart
from sandbox_agent.errors import SetupError, UsageError
from sandbox_agent.ports import free_port
from sandbox_agent.procstat import is_gone_or_zombie, process_start_time
from sandbox_agent.sandbox.base import Runtime
from sandbox_agent.settings import state_home

HEAD_IP = "127.0.0.2"
WORKER_IPS: tuple[str, ...] = ("127.0.0.3", "127.0.0.4")
START_TIMEOUT_S = 120.0
"""A node's ``ray start`` on a busy 2-core machine took up to ~30 s here."""
STOP_GRACE_S = 30.0
STARTED_MARK = "Ray runtime started."
RECORD_FILE = "local.json"


def record_path() -> Path:
    """Where ``make cluster-up`` records the cluster it started (``--ray auto`` reads it)."""
    return state_home() / "cluster" / RECORD_FILE


class NodeProcess(BaseModel):
    """One node's ``ray start --block`` process, the leader of the node's process group."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ip: str
    pid: int
    start_time: str
    """``/proc/<pid>/stat`` start time: tells our process from a later one with its pid."""
    head: bool
    log: Path


class LocalCluster(BaseModel):
    """What ``up`` started: enough to connect to it and to stop every process of it."""

    model_config = ConfigDict(extra="forbid")

    address: str
    """The head's GCS, ``ip:port``: ``ray.init(address=...)``."""
    client_address: str
    """``ray://ip:port`` of the head's Ray Client server."""
    temp_dir: Path
    nodes: list[NodeProcess]
    runtimes: list[Runtime]

    @property
    def head_ip(self) -> str:
        return self.address.rpartition(":")[0]


def _spawn(start: RayStart, runtimes: Sequence[Runtime], log: Path, env: Mapping[str, str]) -> int:
    """Start one node in a new session, its output appended to ``log``; return its pid.

    ``posix_spawn`` rather than ``Popen``: the node outlives this process (``cluster up``
    returns), and is reaped by pid (``_reap_child``) when this process is still its parent.
    """
    argv = [sys.executable, "-m", "sandbox_agent.cluster", "node", start.model_dump_json()]
    argv += [f"--runtime={runtime}" for runtime in runtimes]
    log.parent.mkdir(parents=True, exist_ok=True)
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, str(log), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600),
        (os.POSIX_SPAWN_DUP2, 1, 2),
    ]
    return os.posix_spawn(
        sys.executable, argv, {**os.environ, **env}, file_actions=actions, setsid=True
    )


def _wait_started(pid: int, log: Path, deadline: float) -> None:
    while time.monotonic() < deadline:
        text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
        if STARTED_MARK in text:
            return
        if is_gone_or_zombie(pid):
            break
        time.sleep(0.2)
    tail = log.read_text(encoding="utf-8", errors="replace")[-1500:] if log.exists() else ""
    _stop_group(pid, None, grace_s=5.0)
    raise SetupError(f"a Ray node did not start (log {log}):\n{tail}")


def _spawn_worker(
    cluster: LocalCluster,
    ip: str,
    slots: int,
    runtimes: Sequence[Runtime] | None,
    env: Mapping[str, str] | None,
) -> tuple[int, Path]:
    start = RayStart(
        node_ip=ip,
        head_address=cluster.address,
        agent_port=free_port(ip),
        slots=slots,
    )
    log = cluster.temp_dir / "nodes" / f"{ip}.log"
    return _spawn(start, runtimes or cluster.runtimes, log, env or {}), log


def _joined(
    cluster: LocalCluster,
    ip: str,
    spawned: tuple[int, Path],
    respawn: Callable[[], tuple[int, Path]],
) -> NodeProcess:
    """Wait for a spawned node; start it once more if it failed (Ray gives a raylet 30 s
    to register, which a busy 2-core machine sometimes misses)."""
    pid, log = spawned
    try:
        _wait_started(pid, log, time.monotonic() + START_TIMEOUT_S)
    except SetupError:
        pid, log = respawn()
        _wait_started(pid, log, time.monotonic() + START_TIMEOUT_S)
    node = NodeProcess(
        ip=ip, pid=pid, start_time=process_start_time(pid) or "", head=False, log=log
    )
    cluster.nodes.append(node)
    return node


def start_node(
    cluster: LocalCluster,
    ip: str,
    *,
    slots: int = DEFAULT_SLOTS,
    runtimes: Sequence[Runtime] | None = None,
    env: Mapping[str, str] | None = None,
) -> NodeProcess:
    """Start one more worker node on ``ip`` and wait until it has joined.

    Raises:
        SetupError: the node did not start (its log's tail is in the message).
    """

    def spawn() -> tuple[int, Path]:
        return _spawn_worker(cluster, ip, slots, runtimes, env)

    return _joined(cluster, ip, spawn(), spawn)


def up(
    *,
    head_ip: str = HEAD_IP,
    worker_ips: Sequence[str] = WORKER_IPS,
    slots: int = DEFAULT_SLOTS,
    runtimes: Sequence[Runtime] = ("runc",),
    env: Mapping[str, str] | None = None,
) -> LocalCluster:
    """Start a head on ``head_ip`` and a worker on each of ``worker_ips``; wait for all.

    Raises:
        SetupError: a node did not start; every node started so far is stopped again.
    """
    temp_dir = Path(tempfile.mkdtemp(prefix="sa-ray-", dir="/tmp"))
    start = RayStart(
        node_ip=head_ip,
        port=free_port(head_ip),
        client_server_port=free_port(head_ip),
        dashboard_port=free_port(head_ip),
        agent_port=free_port(head_ip),
        temp_dir=temp_dir,
        slots=slots,
    )
    log = temp_dir / "nodes" / f"{head_ip}.log"
    pid = _spawn(start, runtimes, log, env or {})
    try:
        _wait_started(pid, log, time.monotonic() + START_TIMEOUT_S)
    except SetupError:  # once more, as for workers (``_joined``)
        pid = _spawn(start, runtimes, log, env or {})
        _wait_started(pid, log, time.monotonic() + START_TIMEOUT_S)
    head = NodeProcess(
        ip=head_ip, pid=pid, start_time=process_start_time(pid) or "", head=True, log=log
    )
    cluster = LocalCluster(
        address=f"{head_ip}:{start.port}",
        client_address=f"ray://{head_ip}:{start.client_server_port}",
        temp_dir=temp_dir,
        nodes=[head],
        runtimes=list(runtimes),
    )
    spawned: list[tuple[str, int, Path]] = []
    try:
        # Workers start side by side: each one's preflight and start take seconds.
        for ip in worker_ips:
            spawned.append((ip, *_spawn_worker(cluster, ip, slots, runtimes, env)))
        for ip, pid, log in spawned:
            _joined(
                cluster,
                ip,
                (pid, log),
                functools.partial(_spawn_worker, cluster, ip, slots, runtimes, env),
            )
    except BaseException:
        for _ip, pid, _log in spawned:
            _stop_group(pid, None, grace_s=5.0)
        down(cluster)
        raise
    return cluster


def _stop_group(
    pid: int, start_time: str | None, *, grace_s: float, sig: int = signal.SIGTERM
) -> None:
    """Signal node ``pid``'s process group, then SIGKILL its whole session after ``grace_s``.

    Ray's workers leave the node's process group (each leads its own) but stay in its
    session, so the session is what holds every process of the node. A leader that is
    alive with another start time is another process reusing the pid: then our session
    is gone already (a pid in use as a session id is never reused).
    """
    now = process_start_time(pid)
    if start_time is not None and now is not None and now != start_time:
        return
    if sig == signal.SIGKILL:
        _signal_session(pid, sig)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, sig)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and session_pids(pid):
        _reap_child(pid)
        time.sleep(0.2)
    while session_pids(pid) and time.monotonic() < deadline + 10:
        _signal_session(pid, signal.SIGKILL)
        _reap_child(pid)
        time.sleep(0.1)
    _reap_child(pid)


def _signal_session(sid: int, sig: int) -> None:
    for member in session_pids(sid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(member, sig)


def _reap_child(pid: int) -> None:
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def session_pids(sid: int) -> list[int]:
    """Live (not zombie) processes of session ``sid``: every process of one node."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text(encoding="ascii", errors="replace")
        except OSError:
            continue
        state, _ppid, _group, session = fields.rpartition(")")[2].split()[:4]
        if int(session) == sid and state != "Z":
            members.append(int(entry.name))
    return members


def stop_node(node: NodeProcess, *, grace_s: float = STOP_GRACE_S) -> None:
    """Stop one node: SIGTERM to its group (Ray's graceful stop), SIGKILL after ``grace_s``."""
    _stop_group(node.pid, node.start_time, grace_s=grace_s)


def kill_node(node: NodeProcess) -> None:
    """Kill one node at once, as if its machine died: SIGKILL to its whole group."""
    _stop_group(node.pid, node.start_time, grace_s=10.0, sig=signal.SIGKILL)


def down(cluster: LocalCluster) -> None:
    """Stop every node, workers first, then the head; remove the session folder."""
    for node in sorted(cluster.nodes, key=lambda node: node.head):
        stop_node(node)
    import shutil

    shutil.rmtree(cluster.temp_dir, ignore_errors=True)


def save(cluster: LocalCluster, path: Path | None = None) -> Path:
    """Record ``cluster`` where ``--ray auto`` and ``make cluster-down`` find it."""
    target = path or record_path()
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    target.write_text(cluster.model_dump_json(indent=1), encoding="utf-8")
    return target


def load(path: Path | None = None) -> LocalCluster | None:
    """The recorded local cluster, or None when none is recorded.

    Raises:
        UsageError: the record exists but cannot be read.
    """
    target = path or record_path()
    try:
        text = target.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as error:
        raise UsageError(f"cannot read {target}: {error.strerror}") from None
    try:
        return LocalCluster.model_validate_json(text)
    except ValueError:
        raise UsageError(f"{target} is not a cluster record: remove it") from None


def alive(cluster: LocalCluster) -> bool:
    """True when the head's ``ray start`` process still runs (same process, not a reuse)."""
    head = next(node for node in cluster.nodes if node.head)
    return process_start_time(head.pid) == head.start_time and not is_gone_or_zombie(head.pid)
