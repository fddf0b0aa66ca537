"""Every attestation check against fake /proc and /sys trees: passing as seen under runc
and runsc on this machine, and failing for each single thing that is wrong."""

from __future__ import annotations

import json
import resource
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from supervisor_helpers import MiB, valid_config

from sandbox_supervisor import attest, syscalls
from sandbox_supervisor.config import parse_config
from sandbox_supervisor.inside import Inside

ENV = {"PATH": "/usr/bin:/bin", "HOSTNAME": "sandbox", "HOME": "/"}
RUNC_MOUNTS = [
    "75 51 0:40 / / ro,relatime master:2 - overlay overlay rw,lowerdir=/l",
    "76 75 0:43 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw",
    "80 79 0:47 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime - tmpfs tmpfs rw,mode=755",
    "92 75 254:0 /tmp/ws /workspace ro,relatime - ext4 /dev/vda rw,discard",
    "93 75 0:49 / /tmp rw,nosuid,nodev,noexec,relatime - tmpfs tmpfs rw,size=65536k",
]
RUNSC_MOUNTS = [
    "8 8 0:8 / / ro  - 9p none ro,trans=fd,rfdno=4,wfdno=4,aname=/",
    "10 8 0:9 / /sys ro,noexec  - sysfs none ro,dentry_cache_limit=1000",
    "11 8 0:10 / /tmp rw,noexec  - tmpfs none rw,size=64m",
    "12 8 0:11 / /proc rw,noexec  - proc none rw,dentry_cache_limit=1000",
    "15 8 0:14 / /workspace ro  - 9p none ro,trans=fd,rfdno=5,wfdno=5,aname=/",
]


@dataclass
class FakeContainer:
    """What a container looks like from inside, written out as files plus syscall fakes."""

    runtime: str = "runc"
    status: dict[str, str] = field(default_factory=dict)
    mounts: list[str] = field(default_factory=lambda: list(RUNC_MOUNTS))
    environ: bytes = b"".join(f"{k}={v}\0".encode() for k, v in ENV.items())
    cgroup_files: dict[str, str] = field(default_factory=dict)
    sockets: list[str] = field(default_factory=list)
    nnp: int = 1
    canary: tuple[int, int] = (-1, 131)
    interfaces: list[str] = field(default_factory=lambda: ["lo"])
    limits: dict[int, tuple[int, int]] = field(
        default_factory=lambda: {
            resource.RLIMIT_NOFILE: (256, 256),
            resource.RLIMIT_FSIZE: (64 * MiB, 64 * MiB),
        }
    )
    uname: tuple[str, str] = ("6.1.0-18-amd64", "#1 SMP PREEMPT_DYNAMIC Debian")

    def __post_init__(self) -> None:
        self.status = {
            "Name": "python3",
            "Pid": "1",
            "Uid": "0\t0\t0\t0",
            "Gid": "0\t0\t0\t0",
            "Groups": "0 ",
            "SigCgt": "0000000000000000",
            "CapInh": "0000000000000000",
            "CapPrm": "00000000000001e0",
            "CapEff": "00000000000001e0",
            "CapBnd": "00000000000001e0",
            "CapAmb": "0000000000000000",
            "NoNewPrivs": "1",
            "Seccomp": "2",
        }
        self.cgroup_files = {
            "memory/memory.limit_in_bytes": str(512 * MiB),
            "memory/memory.memsw.limit_in_bytes": str(512 * MiB),
            "memory/memory.oom_control": "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n",
            "pids/pids.max": "128",
        }
        if self.runtime == "runsc":
            for name in ("SigCgt", "CapAmb", "NoNewPrivs"):
                del self.status[name]
            self.mounts = list(RUNSC_MOUNTS)
            self.cgroup_files = {}
            self.canary = (-1, 1)
            self.uname = (attest.GVISOR_RELEASE, attest.GVISOR_VERSION)

    def build(self, root: Path) -> Inside:
        proc, sys_root, fs_root = root / "proc", root / "sys", root / "fs"
        (proc / "self").mkdir(parents=True)
        (proc / "self" / "status").write_text(
            "".join(f"{key}:\t{value}\n" for key, value in self.status.items())
        )
        (proc / "self" / "mountinfo").write_text("\n".join(self.mounts) + "\n")
        (proc / "self" / "environ").write_bytes(self.environ)
        for name, text in self.cgroup_files.items():
            path = sys_root / "fs" / "cgroup" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        fs_root.mkdir()
        for name in self.sockets:
            path = fs_root / name.lstrip("/")
            path.parent.mkdir(parents=True, exist_ok=True)
            with socket.socket(socket.AF_UNIX) as server:
                server.bind(str(path))
        return Inside(
            proc_root=proc,
            sys_root=sys_root,
            fs_root=fs_root,
            no_new_privs=lambda: self.nnp,
            seccomp_canary=lambda nr: self.canary,
            interface_names=lambda: list(self.interfaces),
            getrlimit=lambda which: self.limits[which],
            uname=lambda: self.uname,
        )


def _config(runtime: str = "runc") -> attest.Config:
    config = valid_config(runtime=runtime)
    config["expect"]["canary"] = {"syscall": 146, "errno": 131 if runtime == "runc" else 1}
    config["expect"]["env"] = ENV
    return parse_config(json.dumps(config))


def _failed(container: FakeContainer, tmp_path: Path) -> dict[str, str]:
    checks = attest.attest(_config(container.runtime), container.build(tmp_path))
    assert [check.name for check in checks] == list(attest.CHECK_NAMES)
    return {check.name: check.detail for check in checks if not check.ok}


def test_check_names_match_the_protocol() -> None:
    protocol_text = (Path(__file__).parents[2] / "docs" / "SANDBOX_PROTOCOL.md").read_text()
    for name in attest.CHECK_NAMES:
        assert f"`{name}`" in protocol_text
    assert len(attest.CHECK_NAMES) == 18


@pytest.mark.parametrize("runtime", ["runc", "runsc"])
def test_a_hardened_container_passes(runtime: str, tmp_path: Path) -> None:
    assert _failed(FakeContainer(runtime=runtime), tmp_path) == {}


def test_gvisor_details_say_what_was_not_visible(tmp_path: Path) -> None:
    container = FakeContainer(runtime="runsc")
    checks = {c.name: c for c in attest.attest(_config("runsc"), container.build(tmp_path))}
    assert checks["cgroup_memory"].detail == "not visible under gVisor"
    assert checks["cgroup_pids"].detail == "not visible under gVisor"
    assert "nosuid,nodev not shown under gVisor" in checks["tmp_mount"].detail


def _set(attr: str, value: object) -> Callable[[FakeContainer], None]:
    return lambda container: setattr(container, attr, value)


def _status(key: str, value: str | None) -> Callable[[FakeContainer], None]:
    def change(container: FakeContainer) -> None:
        if value is None:
            del container.status[key]
        else:
            container.status[key] = value

    return change


def _mount(index: int, line: str) -> Callable[[FakeContainer], None]:
    def change(container: FakeContainer) -> None:
        container.mounts[index] = line

    return change


def _cgroup(name: str, text: str | None) -> Callable[[FakeContainer], None]:
    def change(container: FakeContainer) -> None:
        if text is None:
            del container.cgroup_files[name]
        else:
            container.cgroup_files[name] = text

    return change


RUNC_BREAKAGES: list[tuple[str, str, Callable[[FakeContainer], None]]] = [
    ("pid1", "not pid 1", _status("Pid", "7")),
    ("pid1", "a signal handler", _status("SigCgt", "0000000000000002")),
    ("uid", "the workload's uid", _status("Uid", "10001\t10001\t10001\t10001")),
    ("uid", "saved uid differs", _status("Uid", "0\t0\t10001\t0")),
    ("gid", "gid", _status("Gid", "10001\t10001\t10001\t10001")),
    ("gid", "extra group", _status("Groups", "0 10001")),
    ("capabilities", "CapEff: Docker's default set", _status("CapEff", "00000000a80425fb")),
    ("capabilities", "CapEff: none", _status("CapEff", "0000000000000000")),
    ("capabilities", "CapPrm: one more", _status("CapPrm", "00000000000001e1")),
    ("capabilities", "CapBnd: SYS_ADMIN", _status("CapBnd", "00000000002001e0")),
    ("capabilities", "CapInh", _status("CapInh", "0000000000000080")),
    ("capabilities", "CapAmb", _status("CapAmb", "0000000000000001")),
    ("capabilities", "CapPrm missing", _status("CapPrm", None)),
    ("no_new_privs", "prctl", _set("nnp", 0)),
    ("no_new_privs", "status line", _status("NoNewPrivs", "0")),
    ("seccomp", "disabled", _status("Seccomp", "0")),
    ("seccomp_canary", "allowed", _set("canary", (0, 0))),
    ("seccomp_canary", "other errno", _set("canary", (-1, 1))),
    ("network", "eth0", _set("interfaces", ["lo", "eth0"])),
    ("rootfs_readonly", "rw root", _mount(0, "75 51 0:40 / / rw,relatime - overlay overlay rw")),
    (
        "workspace_readonly",
        "rw workspace",
        _mount(3, "92 75 254:0 /tmp/ws /workspace rw,relatime - ext4 /dev/vda rw"),
    ),
    (
        "tmp_mount",
        "exec tmp",
        _mount(4, "93 75 0:49 / /tmp rw,nosuid,nodev,relatime - tmpfs tmpfs rw,size=65536k"),
    ),
    (
        "tmp_mount",
        "size",
        _mount(4, "93 75 0:49 / /tmp rw,nosuid,nodev,noexec - tmpfs tmpfs rw,size=1g"),
    ),
    (
        "tmp_mount",
        "not tmpfs",
        _mount(4, "93 75 0:49 / /tmp rw,nosuid,nodev,noexec - ext4 /dev/vda rw,size=65536k"),
    ),
    ("tmp_mount", "no mount", lambda c: c.mounts.pop(4)),
    ("rlimits", "nofile", lambda c: c.limits.update({resource.RLIMIT_NOFILE: (256, 1024)})),
    ("rlimits", "fsize", lambda c: c.limits.update({resource.RLIMIT_FSIZE: (-1, -1)})),
    ("cgroup_memory", "memory", _cgroup("memory/memory.limit_in_bytes", str(1024 * MiB))),
    ("cgroup_memory", "swap", _cgroup("memory/memory.memsw.limit_in_bytes", "-1")),
    ("cgroup_memory", "not visible", _cgroup("memory/memory.limit_in_bytes", None)),
    ("cgroup_pids", "pids", _cgroup("pids/pids.max", "max")),
    ("cgroup_pids", "not visible", _cgroup("pids/pids.max", None)),
    ("environment", "extra", _set("environ", b"PATH=/usr/bin:/bin\0HOSTNAME=sandbox\0X=1\0")),
    ("environment", "missing", _set("environ", b"PATH=/usr/bin:/bin\0HOME=/\0")),
    ("environment", "changed", _set("environ", b"PATH=/bin\0HOSTNAME=sandbox\0HOME=/\0")),
    ("environment", "duplicate", _set("environ", b"PATH=/x\0PATH=/usr/bin:/bin\0HOME=/\0")),
    ("docker_socket", "well-known path", _set("sockets", ["/var/run/docker.sock"])),
    ("kernel", "gVisor under runc", _set("uname", (attest.GVISOR_RELEASE, attest.GVISOR_VERSION))),
]


@pytest.mark.parametrize(
    ("name", "mutate"),
    [(name, mutate) for name, _, mutate in RUNC_BREAKAGES],
    ids=[f"{name}-{why}" for name, why, _ in RUNC_BREAKAGES],
)
def test_each_breakage_fails_exactly_its_check(
    name: str, mutate: Callable[[FakeContainer], None], tmp_path: Path
) -> None:
    container = FakeContainer()
    mutate(container)
    assert set(_failed(container, tmp_path)) == {name}


def test_a_socket_mounted_anywhere_is_found(tmp_path: Path) -> None:
    container = FakeContainer(sockets=["/srv/d.sock"])
    container.mounts.append("99 75 0:5 /run/docker.sock /srv/d.sock rw - tmpfs tmpfs rw")
    failed = _failed(container, tmp_path)
    assert set(failed) == {"docker_socket"}
    assert "/srv/d.sock" in failed["docker_socket"]


RUNSC_BREAKAGES: list[tuple[str, Callable[[FakeContainer], None]]] = [
    ("kernel", _set("uname", ("6.1.0", "#1 SMP"))),
    ("no_new_privs", _set("nnp", 0)),
    ("capabilities", _status("CapEff", "0000000000000001")),
    ("capabilities", _status("CapBnd", "000001ffffffffff")),
    ("tmp_mount", _mount(2, "11 8 0:10 / /tmp rw  - tmpfs none rw,size=64m")),
    ("cgroup_pids", _cgroup("pids/pids.max", "4096")),
]


@pytest.mark.parametrize(("name", "mutate"), RUNSC_BREAKAGES, ids=[n for n, _ in RUNSC_BREAKAGES])
def test_gvisor_breakages_fail(
    name: str, mutate: Callable[[FakeContainer], None], tmp_path: Path
) -> None:
    container = FakeContainer(runtime="runsc")
    mutate(container)
    assert set(_failed(container, tmp_path)) == {name}


def test_a_check_that_raises_fails_with_the_error(tmp_path: Path) -> None:
    container = FakeContainer()
    inside = container.build(tmp_path)
    (Path(inside.proc_root) / "self" / "mountinfo").unlink()
    failed = {c.name: c.detail for c in attest.attest(_config(), inside) if not c.ok}
    assert set(failed) == {
        "rootfs_readonly",
        "workspace_readonly",
        "tmp_mount",
        "docker_socket",
        "dependencies",
    }
    assert failed["tmp_mount"].startswith("FileNotFoundError")


def test_real_syscall_helpers_answer_on_the_host() -> None:
    assert syscalls.no_new_privs() in (0, 1)
    result, _ = syscalls.seccomp_canary(146)
    assert result == 0  # sched_get_priority_max(SCHED_OTHER): no rule on the host
    assert "lo" in Inside().interface_names()
