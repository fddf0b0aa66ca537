"""Attestation: PID 1 checks the container's isolation from inside, before any fork.

Each check is a small function ``(config, inside) -> Check``. ``inside.Inside`` holds
the filesystem roots and the few system calls the checks use, so that every check runs
on the host against a fake ``/proc`` and ``/sys`` tree in the unit tests (issue 31 split
that, and the C library calls of ``syscalls``, from the checks kept here).

gVisor (runsc) shows less than Linux: no ``NoNewPrivs``/``CapAmb`` status lines, no
``nosuid``/``nodev`` in mountinfo, no cgroup files, a fixed ``4.4.0`` kernel. Where
it shows less, the check asks the kernel another way (``prctl``) or says in its
detail what could not be seen; it never passes a value it saw and found wrong.
"""

from __future__ import annotations

# PID 1 starts once per sandbox run, so its imports are on every run's critical path
# (issue 3): no dataclasses/typing/pathlib/socket here; type-only imports are below.
import os
import resource
import stat

from sandbox_supervisor import cgroup, deps
from sandbox_supervisor.inside import Inside, parse_environ, read_environ_bytes
from sandbox_supervisor.mounts import Mount, covering_mount, tmpfs_size_bytes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from sandbox_supervisor.config import Config

GVISOR_RELEASE = "4.4.0"
GVISOR_VERSION = "#1 SMP Sun Jan 10 15:06:54 PST 2016"
DOCKER_SOCKET_PATHS = (
    "/var/run/docker.sock",
    "/run/docker.sock",
    "/run/containerd/containerd.sock",
    "/var/run/containerd/containerd.sock",
    "/run/podman/podman.sock",
)
CAPABILITY_LINES = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")
REQUIRED_CAPABILITY_LINES = ("CapPrm", "CapEff", "CapBnd")


class Check:
    """One attestation result, as it appears in the ``A`` record."""

    __slots__ = ("detail", "name", "ok")

    def __init__(self, name: str, ok: bool, detail: str) -> None:
        self.name = name
        self.ok = ok
        self.detail = detail

    def _asdict(self) -> dict[str, object]:
        return {"name": self.name, "ok": self.ok, "detail": self.detail}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Check):
            return NotImplemented
        return (self.name, self.ok, self.detail) == (other.name, other.ok, other.detail)

    def __hash__(self) -> int:
        return hash((self.name, self.ok, self.detail))

    def __repr__(self) -> str:
        return f"Check({self.name!r}, {self.ok!r}, {self.detail!r})"


def check_pid1(config: Config, inside: Inside) -> Check:
    status = inside.status()
    caught = status.get("SigCgt", "0")
    ok = status.get("Pid") == "1" and int(caught, 16) == 0
    return Check("pid1", ok, f"pid {status.get('Pid')}, caught signals {caught}")


def _ids(line: str | None) -> list[str]:
    return (line or "").split()


def check_uid(config: Config, inside: Inside) -> Check:
    ids = _ids(inside.status().get("Uid"))
    ok = len(ids) == 4 and set(ids) == {str(config.expect.uid)}
    return Check("uid", ok, " ".join(ids))


def check_gid(config: Config, inside: Inside) -> Check:
    status = inside.status()
    ids = _ids(status.get("Gid"))
    groups = set(_ids(status.get("Groups")))
    ok = len(ids) == 4 and set(ids) == {str(config.expect.gid)} and groups <= set(ids)
    return Check("gid", ok, f"{' '.join(ids)}; groups {' '.join(sorted(groups)) or 'none'}")


def check_capabilities(config: Config, inside: Inside) -> Check:
    """PID 1's permitted, effective and bounding sets are exactly ``expect.capabilities``
    (``identity.PID1_CAPABILITIES``: what it needs to drop each workload process to
    another uid and to signal it), and its inheritable and ambient sets are empty, so
    nothing passes to a child but through ``identity.drop_to``."""
    status = inside.status()
    shown = {name: status[name] for name in CAPABILITY_LINES if name in status}
    missing = [name for name in REQUIRED_CAPABILITY_LINES if name not in shown]
    want = config.expect.capabilities
    wrong = [
        name
        for name, value in shown.items()
        if int(value, 16) != (want if name in REQUIRED_CAPABILITY_LINES else 0)
    ]
    detail = ", ".join(f"{name} {value}" for name, value in shown.items())
    detail += f" (want {want:016x} permitted, effective, bounding; 0 otherwise)"
    if missing:
        detail += f"; missing {', '.join(missing)}"
    return Check("capabilities", not missing and not wrong, detail)


def check_no_new_privs(config: Config, inside: Inside) -> Check:
    value = inside.no_new_privs()
    line = inside.status().get("NoNewPrivs")
    ok = value == 1 and line in (None, "1")
    return Check("no_new_privs", ok, f"prctl {value}, status {line or 'not shown'}")


def check_seccomp(config: Config, inside: Inside) -> Check:
    mode = inside.status().get("Seccomp")
    return Check("seccomp", mode == "2", f"Seccomp: {mode}")


def check_seccomp_canary(config: Config, inside: Inside) -> Check:
    canary = config.expect.canary
    result, errno = inside.seccomp_canary(canary.syscall)
    ok = result == -1 and errno == canary.errno
    detail = f"syscall {canary.syscall} returned {result}, errno {errno} (want {canary.errno})"
    return Check("seccomp_canary", ok, detail)


def check_network(config: Config, inside: Inside) -> Check:
    names = sorted(inside.interface_names())
    return Check("network", names == ["lo"], ",".join(names) or "no interfaces")


def _readonly(name: str, mounts: list[Mount], path: str) -> Check:
    mount = covering_mount(mounts, path)
    if mount is None:
        return Check(name, False, f"no mount covers {path}")
    ok = "ro" in mount.options and "rw" not in mount.options
    return Check(name, ok, f"{path} on {mount.mount_point} ({','.join(sorted(mount.options))})")


def check_rootfs_readonly(config: Config, inside: Inside) -> Check:
    return _readonly("rootfs_readonly", inside.mounts(), "/")


def check_workspace_readonly(config: Config, inside: Inside) -> Check:
    return _readonly("workspace_readonly", inside.mounts(), config.expect.workspace)


def check_tmp_mount(config: Config, inside: Inside) -> Check:
    path = config.expect.tmp
    mount = covering_mount(inside.mounts(), path)
    if mount is None or mount.mount_point != path or mount.fstype != "tmpfs":
        return Check("tmp_mount", False, f"{path} is not a tmpfs mount")
    # gVisor's mountinfo shows noexec but never nosuid/nodev; there, no set-uid file
    # exists in the image, no_new_privs is set and CAP_MKNOD is gone.
    wanted = {"noexec"} if config.runtime == "runsc" else {"noexec", "nosuid", "nodev"}
    missing = sorted(wanted - mount.options)
    size = tmpfs_size_bytes(mount)
    ok = not missing and "rw" in mount.options and size == config.expect.tmpfs_bytes
    detail = f"{','.join(sorted(mount.options))}; size {size} (want {config.expect.tmpfs_bytes})"
    if missing:
        detail += f"; missing {','.join(missing)}"
    if config.runtime == "runsc":
        detail += "; nosuid,nodev not shown under gVisor"
    return Check("tmp_mount", ok, detail)


def check_rlimits(config: Config, inside: Inside) -> Check:
    nofile = inside.getrlimit(resource.RLIMIT_NOFILE)
    fsize = inside.getrlimit(resource.RLIMIT_FSIZE)
    ok = nofile == (config.expect.nofile,) * 2 and fsize == (config.expect.fsize_bytes,) * 2
    return Check("rlimits", ok, f"NOFILE {nofile[0]}/{nofile[1]}, FSIZE {fsize[0]}/{fsize[1]}")


def _gvisor_hides_cgroups(name: str, config: Config, seen: object) -> Check | None:
    if config.runtime == "runsc" and seen is None:
        return Check(name, True, "not visible under gVisor")
    return None


def check_cgroup_memory(config: Config, inside: Inside) -> Check:
    memory, with_swap = cgroup.memory_limits(inside.cgroup_root())
    hidden = _gvisor_hides_cgroups("cgroup_memory", config, memory)
    if hidden is not None:
        return hidden
    want = config.expect.memory_bytes
    ok = memory == want and with_swap == want
    return Check("cgroup_memory", ok, f"memory {memory}, memory+swap {with_swap} (want {want})")


def check_cgroup_pids(config: Config, inside: Inside) -> Check:
    pids = cgroup.pids_limit(inside.cgroup_root())
    hidden = _gvisor_hides_cgroups("cgroup_pids", config, pids)
    if hidden is not None:
        return hidden
    return Check("cgroup_pids", pids == config.expect.pids, f"{pids} (want {config.expect.pids})")


def check_environment(config: Config, inside: Inside) -> Check:
    raw = inside.environ
    environ = parse_environ(read_environ_bytes(inside.proc_root) if raw is None else raw)
    if environ is None:
        return Check("environment", False, "malformed or duplicate entry")
    want = config.expect.env
    extra = sorted(environ.keys() - want.keys())
    missing = sorted(want.keys() - environ.keys())
    changed = sorted(key for key in want.keys() & environ.keys() if want[key] != environ[key])
    detail = f"extra {extra}, missing {missing}, different {changed}"
    return Check("environment", not (extra or missing or changed), detail[:500])


def check_docker_socket(config: Config, inside: Inside) -> Check:
    candidates = set(DOCKER_SOCKET_PATHS)
    candidates.update(mount.mount_point for mount in inside.mounts())
    found = []
    for path in sorted(candidates):
        target = os.path.join(inside.fs_root, path.lstrip("/"))
        try:
            if stat.S_ISSOCK(os.stat(target).st_mode):
                found.append(path)
        except OSError:
            continue
    return Check("docker_socket", not found, ", ".join(found) or "none found")


def check_kernel(config: Config, inside: Inside) -> Check:
    release, version = inside.uname()
    gvisor = release == GVISOR_RELEASE and version == GVISOR_VERSION
    want = config.runtime == "runsc"
    return Check(
        "kernel", gvisor == want, f"{release} {version} ({'' if gvisor else 'not '}gVisor)"
    )


def check_dependencies(config: Config, inside: Inside) -> Check:
    """The dependency environment (issue 17): none expected, then nothing is mounted at
    ``deps.DEPS_ROOT`` and the image's folder there is empty; else a read-only mount
    exactly there, holding exactly ``manifest.json`` and ``site``, whose manifest
    hashes to the sha256 the spec pinned (the manifest lists every file with its
    hash, checked on the host when the environment was made)."""
    want = config.expect.deps
    point = want.path if want is not None else deps.DEPS_ROOT
    here = os.path.join(inside.fs_root, point.lstrip("/"))
    mount = covering_mount(inside.mounts(), point)
    mounted = mount is not None and mount.mount_point == point
    try:
        entries = sorted(os.listdir(here))
    except FileNotFoundError:
        entries = []
    if want is None:
        ok = not mounted and not entries
        return Check("dependencies", ok, f"none expected; {point}: {len(entries)} entries")
    if not mounted or mount is None:
        return Check("dependencies", False, f"nothing is mounted at {point}")
    readonly = "ro" in mount.options and "rw" not in mount.options
    layout = entries == sorted(deps.ROOT_ENTRIES)
    digest = deps.manifest_sha256(os.path.join(here, "manifest.json")) if layout else ""
    ok = readonly and layout and digest == want.manifest_sha256
    detail = (
        f"{point} ({','.join(sorted(mount.options))}); entries {entries[:5]}; "
        f"manifest {digest[:16] or 'unread'} (want {want.manifest_sha256[:16]})"
    )
    return Check("dependencies", ok, detail)


CHECKS: tuple[Callable[[Config, Inside], Check], ...] = (
    check_pid1,
    check_uid,
    check_gid,
    check_capabilities,
    check_no_new_privs,
    check_seccomp,
    check_seccomp_canary,
    check_network,
    check_rootfs_readonly,
    check_workspace_readonly,
    check_tmp_mount,
    check_rlimits,
    check_cgroup_memory,
    check_cgroup_pids,
    check_environment,
    check_docker_socket,
    check_kernel,
    check_dependencies,
)
CHECK_NAMES = tuple(check.__name__.removeprefix("check_") for check in CHECKS)
"""The same names on both runtimes; the host refuses a record missing any of them."""


def attest(config: Config, inside: Inside | None = None) -> list[Check]:
    """Run every check; a check that raises fails with the error as its detail."""
    where = Inside() if inside is None else inside
    results = []
    for check in CHECKS:
        name = check.__name__.removeprefix("check_")
        try:
            result = check(config, where)
        except Exception as error:  # a check that cannot look has not passed
            result = Check(name, False, f"{type(error).__name__}: {error}"[:500])
        results.append(result)
    return results
