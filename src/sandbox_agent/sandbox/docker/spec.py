"""One spec object drives both the Docker create request and the check of the inspect result.

``ContainerSpec.fields()`` is the single declaration: every security-relevant field as
``(inspect path, value)``. ``create_body()`` builds the create request from it, and
``verify()`` compares the inspect result with the very same table, plus the facts only
inspect shows (the resolved image ID, the mount list). Two lists would drift; one cannot.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import BaseModel, ConfigDict

from sandbox_agent.canonical import canonical_json
from sandbox_agent.sandbox.base import JudgeRequest, Runtime, SandboxRequest
from sandbox_agent.sandbox.docker import seccomp
from sandbox_agent.sandbox.docker.owner import LABEL_OWNER, LABEL_SANDBOX
from sandbox_supervisor.deps import DEPS_ROOT
from sandbox_supervisor.identity import JUDGE_UID, PID1_CAPABILITIES, WORKLOAD_UID

PROTOCOL_VERSION = 1
SANDBOX_UID = WORKLOAD_UID
"""Every workload process (the code under test) runs as this uid, with no capability."""
PID1_UID = 0
PID1_USER = f"{PID1_UID}:{PID1_UID}"
"""The container's user is PID 1's: uid 0 with ``PID1_CAP_ADD`` only, another user than
every workload process (``sandbox_supervisor.identity``; issue 15, G1)."""
PID1_CAP_ADD = ("KILL", "SETGID", "SETPCAP", "SETUID")
"""PID 1's capabilities, all others dropped: drop each forked child to ``SANDBOX_UID``
(bounding set, groups, gid, uid) and signal the workload at its deadline."""
SANDBOX_HOSTNAME = "sandbox"
WORKSPACE_TARGET = "/workspace"
DEPS_TARGET = DEPS_ROOT
"""Where a dependency environment is mounted read-only (issue 17; ``sandbox_supervisor.deps``)."""
DEPS_WORKLOAD_ENV: tuple[tuple[str, str], ...] = (
    ("OPENBLAS_NUM_THREADS", "1"),
    ("OMP_NUM_THREADS", "1"),
    ("MKL_NUM_THREADS", "1"),
)
"""With an environment, numerical libraries start no thread pool: the sandbox has one CPU
by default, and under runsc no thread can be started at all (glibc's ``clone3`` gets
gVisor's ``EPERM`` instead of the profile's ``ENOSYS``, and glibc does not fall back;
docs/DEPENDENCIES.md), so numpy's OpenBLAS would fail its import there."""
TMP_TARGET = "/tmp"  # noqa: S108 - the container's own tmpfs, not a host path
LOG_DRIVER = "none"
"""PID 1's frames are read through attach; nothing needs to be kept in a log file."""
KILL_GRACE_S = 1.0
"""PID 1 sends SIGKILL this long after SIGTERM at its deadline."""
GO_TIMEOUT_S = 300.0
"""How long PID 1 waits after its attestation for the host's go, then exits having run
nothing: the longest a pre-started sandbox can stay ready (``warm``)."""
NO_NEW_PRIVILEGES = "no-new-privileges:true"
SUPERVISOR_COMMAND = ("/usr/bin/python3", "-I", "-B", "-m", "sandbox_supervisor")
"""PID 1, its config on stdin. With ``site`` (no ``-S``): the trusted runner, forked from
it, must start in the state ``python3 -I -B`` gives (``sandbox_supervisor.launch``)."""
BASE_ENV: tuple[tuple[str, str], ...] = (
    ("PATH", "/usr/local/bin:/usr/bin:/bin"),
    ("HOME", "/tmp"),  # noqa: S108 - set here so Docker does not add one of its own
    ("LANG", "C.UTF-8"),
)
"""The container's environment (Docker adds only ``HOSTNAME``, which we also fix)."""

MASKED_PATHS = (
    "/proc/asound",
    "/proc/acpi",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/sys/firmware",
)
"""Docker 20.10's defaults, stated so that an empty list (nothing masked) is refused."""
READONLY_PATHS = ("/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger")

# Inspect values that count as "nothing": Docker reports an unset list as null or [].
_EMPTY: tuple[Any, ...] = (None, [], {}, "", False, 0)


class ContainerSpec(BaseModel):
    """Everything security-relevant about one sandbox container, frozen before create."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    image_id: str
    """The recorded image ID (``sha256:...``); inspect's ``Image`` must equal it."""
    runtime: Runtime
    cmd: tuple[str, ...]
    """PID 1's command: the supervisor."""
    config: str
    """PID 1's config, canonical JSON, written on its stdin after start (never on its
    command line, where every process could read the nonce); in the spec's hash."""
    env: tuple[str, ...]
    """The exact container environment, ``NAME=value``, in order."""
    labels: tuple[tuple[str, str], ...]
    workspace: str
    """Absolute host folder, bound read-only at ``/workspace``."""
    environment: str | None = None
    """Absolute host folder of the dependency environment, bound read-only at ``/deps``;
    None: no environment, nothing more is mounted."""
    environment_manifest_sha256: str | None = None
    """sha256 of that environment's ``manifest.json`` (in PID 1's config too, which
    checks it from inside)."""
    seccomp_json: str
    memory_bytes: int
    nano_cpus: int
    pids_limit: int
    nofile: int
    fsize_bytes: int
    tmpfs_bytes: int

    def fields(self) -> dict[str, Any]:
        """Every checked field as ``{"Config.X" | "HostConfig.X": value}``; empty means none."""
        return {
            "Config.Image": self.image_id,
            "Config.Cmd": list(self.cmd),
            "Config.Entrypoint": None,
            "Config.Env": list(self.env),
            "Config.User": PID1_USER,
            "Config.Hostname": SANDBOX_HOSTNAME,
            "Config.WorkingDir": WORKSPACE_TARGET,
            "Config.Labels": dict(self.labels),
            "Config.Tty": False,
            "Config.OpenStdin": True,  # the host's go arrives on PID 1's stdin
            "Config.StdinOnce": True,  # closed for good when the host closes its side
            "Config.AttachStdin": True,
            "Config.AttachStdout": True,
            "Config.AttachStderr": True,
            "Config.ExposedPorts": None,
            "Config.Volumes": None,
            "HostConfig.Runtime": self.runtime,
            "HostConfig.Privileged": False,
            "HostConfig.CapDrop": ["ALL"],
            "HostConfig.CapAdd": list(PID1_CAP_ADD),
            "HostConfig.SecurityOpt": [NO_NEW_PRIVILEGES, f"seccomp={self.seccomp_json}"],
            "HostConfig.NetworkMode": "none",
            "HostConfig.ReadonlyRootfs": True,
            "HostConfig.Binds": [f"{source}:{target}:ro" for source, target in self.binds()],
            "HostConfig.Mounts": None,
            "HostConfig.VolumesFrom": None,
            "HostConfig.Tmpfs": {TMP_TARGET: self.tmpfs_options},
            "HostConfig.Memory": self.memory_bytes,
            "HostConfig.MemorySwap": self.memory_bytes,
            "HostConfig.NanoCpus": self.nano_cpus,
            "HostConfig.PidsLimit": self.pids_limit,
            "HostConfig.Ulimits": [
                {"Name": "nofile", "Soft": self.nofile, "Hard": self.nofile},
                {"Name": "fsize", "Soft": self.fsize_bytes, "Hard": self.fsize_bytes},
            ],
            "HostConfig.OomKillDisable": False,
            "HostConfig.Devices": None,
            "HostConfig.DeviceRequests": None,
            "HostConfig.DeviceCgroupRules": None,
            "HostConfig.ExtraHosts": None,
            "HostConfig.Dns": None,
            "HostConfig.PortBindings": None,
            "HostConfig.PublishAllPorts": False,
            "HostConfig.Links": None,
            "HostConfig.GroupAdd": None,
            "HostConfig.Sysctls": None,
            "HostConfig.PidMode": "",
            "HostConfig.IpcMode": "private",
            "HostConfig.UTSMode": "",
            "HostConfig.UsernsMode": "",
            "HostConfig.CgroupParent": "",
            "HostConfig.Init": None,
            "HostConfig.LogConfig": {"Type": LOG_DRIVER, "Config": {}},
            "HostConfig.AutoRemove": False,
            "HostConfig.MaskedPaths": list(MASKED_PATHS),
            "HostConfig.ReadonlyPaths": list(READONLY_PATHS),
            "HostConfig.RestartPolicy": {"Name": "no", "MaximumRetryCount": 0},
        }

    def binds(self) -> list[tuple[str, str]]:
        """Every read-only bind mount as ``(host folder, container folder)``, in order."""
        binds = [(self.workspace, WORKSPACE_TARGET)]
        if self.environment is not None:
            binds.append((self.environment, DEPS_TARGET))
        return binds

    @property
    def tmpfs_options(self) -> str:
        return f"rw,noexec,nosuid,nodev,size={self.tmpfs_bytes}"

    def create_body(self) -> dict[str, Any]:
        """The JSON body of ``POST /containers/create``, built from ``fields()`` only."""
        body: dict[str, Any] = {"HostConfig": {}}
        for path, value in self.fields().items():
            section, _, name = path.partition(".")
            target = body if section == "Config" else body["HostConfig"]
            target[name] = value
        return body

    def sha256(self) -> str:
        """sha256 of the spec's canonical JSON: names this exact container in the evidence."""
        return hashlib.sha256(canonical_json(self.model_dump(mode="json"))).hexdigest()


def supervisor_config(
    request: SandboxRequest, nonce: str, go_timeout_s: float = GO_TIMEOUT_S
) -> dict[str, Any]:
    """PID 1's config (docs/SANDBOX_PROTOCOL.md), written on its stdin after start."""
    limits = request.limits
    container_env = dict(BASE_ENV)
    environment = request.environment
    deps = (
        None
        if environment is None
        else {"path": DEPS_TARGET, "manifest_sha256": environment.manifest_sha256}
    )
    deps_env = {} if environment is None else dict(DEPS_WORKLOAD_ENV)
    return {
        "v": PROTOCOL_VERSION,
        "nonce": nonce,
        "runtime": request.runtime,
        "argv": list(request.argv),
        "cwd": WORKSPACE_TARGET,
        "workload_env": {**container_env, **deps_env, **request.workload_env},
        "deadline_s": limits.timeout_s,
        "kill_grace_s": KILL_GRACE_S,
        "output_budget": limits.output_budget_bytes,
        "go_timeout_s": go_timeout_s,
        "workload_uid": SANDBOX_UID,
        "workload_gid": SANDBOX_UID,
        "judge": _judge_config(request),
        "expect": {
            "uid": PID1_UID,
            "gid": PID1_UID,
            "capabilities": PID1_CAPABILITIES,
            "memory_bytes": limits.memory_bytes,
            "pids": limits.pids,
            "nofile": limits.nofile,
            "fsize_bytes": limits.fsize_bytes,
            "tmpfs_bytes": limits.tmpfs_bytes,
            "env": {**container_env, "HOSTNAME": SANDBOX_HOSTNAME},
            "workspace": WORKSPACE_TARGET,
            "tmp": TMP_TARGET,
            "canary": seccomp.canary(request.runtime),
            "deps": deps,
        },
    }


def judge_input(judge: JudgeRequest) -> str:
    """The judge's input (``sandbox_supervisor.judge.read_input``), as PID 1 hands it over."""
    return json.dumps(
        {"name": judge.module_name, "source": judge.source, "call_timeout_s": judge.call_timeout_s}
    )


def _judge_config(request: SandboxRequest) -> dict[str, Any] | None:
    judge = request.judge
    if judge is None:
        return None
    return {
        "input": judge_input(judge),
        "candidate_argv": list(judge.candidate_argv),
        "uid": JUDGE_UID,
        "gid": JUDGE_UID,
    }


def build_spec(
    request: SandboxRequest,
    image_id: str,
    nonce: str,
    owner: str,
    *,
    go_timeout_s: float = GO_TIMEOUT_S,
) -> ContainerSpec:
    """The spec of the container that runs ``request``.

    Raises:
        SetupError: the pinned seccomp profile is missing or was changed.
    """
    limits = request.limits
    config = canonical_json(supervisor_config(request, nonce, go_timeout_s)).decode()
    labels = {**request.labels, LABEL_SANDBOX: "1", LABEL_OWNER: owner}
    return ContainerSpec(
        image_id=image_id,
        runtime=request.runtime,
        cmd=SUPERVISOR_COMMAND,
        config=config,
        env=tuple(f"{name}={value}" for name, value in BASE_ENV),
        labels=tuple(sorted(labels.items())),
        workspace=str(request.workspace.resolve()),
        environment=None
        if request.environment is None
        else str(request.environment.host_path.resolve()),
        environment_manifest_sha256=None
        if request.environment is None
        else request.environment.manifest_sha256,
        seccomp_json=seccomp.profile_json(request.runtime),
        memory_bytes=limits.memory_bytes,
        nano_cpus=round(limits.cpus * 1e9),
        pids_limit=limits.pids,
        nofile=limits.nofile,
        fsize_bytes=limits.fsize_bytes,
        tmpfs_bytes=limits.tmpfs_bytes,
    )


def _lookup(inspect: dict[str, Any], path: str) -> Any:
    section, _, name = path.partition(".")
    holder = inspect.get(section)
    return holder.get(name) if isinstance(holder, dict) else None


def _matches(expected: Any, actual: Any) -> bool:
    if expected is None or expected is False:
        return actual in _EMPTY
    return canonical_json(expected) == canonical_json(actual)


def verify(spec: ContainerSpec, inspect: dict[str, Any]) -> list[str]:
    """Compare a container's inspect result with its spec. Pure.

    Returns:
        The names of the fields that differ (``HostConfig.CapAdd``, ``Image``, ...);
        an empty list means the container is exactly what the spec declares.
    """
    mismatches = [
        path for path, value in spec.fields().items() if not _matches(value, _lookup(inspect, path))
    ]
    if inspect.get("Image") != spec.image_id:
        mismatches.append("Image")
    mounts = sorted(inspect.get("Mounts") or [], key=lambda m: str(m.get("Destination")))
    expected = sorted(spec.binds(), key=lambda bind: bind[1])
    if len(mounts) != len(expected) or any(
        mount.get(key) != value
        for mount, (source, target) in zip(mounts, expected, strict=True)
        for key, value in {
            "Type": "bind",
            "Source": source,
            "Destination": target,
            "RW": False,
        }.items()
    ):
        mismatches.append("Mounts")
    if inspect.get("AppArmorProfile") not in ("", "docker-default", None):
        mismatches.append("AppArmorProfile")
    return mismatches
