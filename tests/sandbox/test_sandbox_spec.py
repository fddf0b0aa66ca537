"""One spec builds the create request and checks the inspect result: every tampering is caught."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from sandbox_agent.sandbox.base import SandboxLimits, SandboxRequest
from sandbox_agent.sandbox.docker import seccomp
from sandbox_agent.sandbox.docker.spec import ContainerSpec, build_spec, supervisor_config, verify

DATA = Path(__file__).parent / "data"
CREATED: dict[str, Any] = json.loads((DATA / "docker_inspect.json").read_text())["created"]


def captured(runtime: str) -> tuple[ContainerSpec, dict[str, Any]]:
    entry = CREATED[runtime]
    return ContainerSpec.model_validate(entry["spec"]), copy.deepcopy(entry["inspect"])


@pytest.mark.parametrize("runtime", ["runc", "runsc"])
def test_the_captured_inspect_matches_its_spec(runtime: str) -> None:
    spec, inspect = captured(runtime)
    assert verify(spec, inspect) == []


def test_the_create_body_carries_every_security_field(tmp_path: Path) -> None:
    limits = SandboxLimits(memory_bytes=256 * 1024 * 1024, cpus=0.5, pids=64)
    request = SandboxRequest(argv=("python3", "-V"), workspace=tmp_path, limits=limits)
    spec = build_spec(request, "sha256:" + "a" * 64, "b" * 32, "host:1:2")
    body = spec.create_body()
    host = body["HostConfig"]
    assert body["Image"] == "sha256:" + "a" * 64
    assert body["User"] == "0:0"  # PID 1's; every workload process is dropped to 10001
    assert body["Hostname"] == "sandbox"
    assert body["Env"] == ["PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8"]
    assert body["Cmd"] == ["/usr/bin/python3", "-I", "-B", "-m", "sandbox_supervisor"]
    assert "b" * 32 not in json.dumps(body)  # the nonce goes on stdin, never in the request
    assert json.loads(spec.config) == supervisor_config(request, "b" * 32)
    assert json.loads(spec.config)["workload_uid"] == 10001
    assert host["CapDrop"] == ["ALL"]
    assert host["CapAdd"] == ["KILL", "SETGID", "SETPCAP", "SETUID"]
    assert host["SecurityOpt"] == ["no-new-privileges:true", "seccomp=" + seccomp.profile_json()]
    assert host["NetworkMode"] == "none"
    assert host["ReadonlyRootfs"] is True
    assert host["Binds"] == [f"{tmp_path.resolve()}:/workspace:ro"]
    assert host["Tmpfs"] == {"/tmp": f"rw,noexec,nosuid,nodev,size={64 * 1024 * 1024}"}
    assert host["Memory"] == host["MemorySwap"] == 256 * 1024 * 1024
    assert host["NanoCpus"] == 500_000_000
    assert host["PidsLimit"] == 64
    assert host["Privileged"] is False
    assert host["LogConfig"] == {"Type": "none", "Config": {}}
    assert host["AutoRemove"] is False
    assert body["Labels"]["sandbox-agent.owner"] == "host:1:2"
    assert len(spec.sha256()) == 64


def test_the_canary_differs_by_runtime(tmp_path: Path) -> None:
    runc = supervisor_config(SandboxRequest(argv=("x",), workspace=tmp_path), "b" * 32)
    runsc = supervisor_config(
        SandboxRequest(argv=("x",), workspace=tmp_path, runtime="runsc"), "b" * 32
    )
    assert runc["expect"]["canary"] == {"syscall": 146, "errno": 131}
    assert runsc["expect"]["canary"] == {"syscall": 146, "errno": 1}
    assert runc["expect"]["env"]["HOSTNAME"] == "sandbox"


def weaker_seccomp(inspect: dict[str, Any]) -> None:
    inspect["HostConfig"]["SecurityOpt"] = ["no-new-privileges:true", "seccomp=unconfined"]


def extra_security_opt(inspect: dict[str, Any]) -> None:
    inspect["HostConfig"]["SecurityOpt"].append("apparmor=unconfined")


def canary_removed(inspect: dict[str, Any]) -> None:
    opts = inspect["HostConfig"]["SecurityOpt"]
    opts[1] = opts[1].replace('"errnoRet":131', '"errnoRet":1')


def writable_mount(inspect: dict[str, Any]) -> None:
    inspect["HostConfig"]["Binds"] = [inspect["HostConfig"]["Binds"][0].replace(":ro", ":rw")]
    inspect["Mounts"][0]["RW"] = True


def extra_mount(inspect: dict[str, Any]) -> None:
    inspect["Mounts"].append({"Type": "volume", "Destination": "/data", "RW": True})


TAMPERINGS = {
    "weaker seccomp": (weaker_seccomp, "HostConfig.SecurityOpt"),
    "another security option": (extra_security_opt, "HostConfig.SecurityOpt"),
    "canary removed": (canary_removed, "HostConfig.SecurityOpt"),
    "an added capability": (
        lambda i: i["HostConfig"]["CapAdd"].append("SYS_ADMIN"),
        "HostConfig.CapAdd",
    ),
    "another capability": (
        lambda i: i["HostConfig"].__setitem__("CapAdd", ["KILL", "SETGID", "SETPCAP", "CHOWN"]),
        "HostConfig.CapAdd",
    ),
    "PID 1's capabilities left out": (
        lambda i: i["HostConfig"].__setitem__("CapAdd", None),
        "HostConfig.CapAdd",
    ),
    "capabilities kept": (
        lambda i: i["HostConfig"].__setitem__("CapDrop", []),
        "HostConfig.CapDrop",
    ),
    "a writable mount": (writable_mount, "HostConfig.Binds"),
    "an extra mount": (extra_mount, "Mounts"),
    "an extra env var": (lambda i: i["Config"]["Env"].append("LD_PRELOAD=/tmp/x.so"), "Config.Env"),
    "privileged": (
        lambda i: i["HostConfig"].__setitem__("Privileged", True),
        "HostConfig.Privileged",
    ),
    "other runtime": (
        lambda i: i["HostConfig"].__setitem__("Runtime", "runsc"),
        "HostConfig.Runtime",
    ),
    "other image": (lambda i: i.__setitem__("Image", "sha256:" + "e" * 64), "Image"),
    "the workload's user for PID 1": (
        lambda i: i["Config"].__setitem__("User", "10001:10001"),
        "Config.User",
    ),
    "no user (the image's)": (lambda i: i["Config"].__setitem__("User", ""), "Config.User"),
    "network": (
        lambda i: i["HostConfig"].__setitem__("NetworkMode", "bridge"),
        "HostConfig.NetworkMode",
    ),
    "writable rootfs": (
        lambda i: i["HostConfig"].__setitem__("ReadonlyRootfs", False),
        "HostConfig.ReadonlyRootfs",
    ),
    "swap": (lambda i: i["HostConfig"].__setitem__("MemorySwap", -1), "HostConfig.MemorySwap"),
    "more pids": (lambda i: i["HostConfig"].__setitem__("PidsLimit", 0), "HostConfig.PidsLimit"),
    "no ulimits": (lambda i: i["HostConfig"].__setitem__("Ulimits", None), "HostConfig.Ulimits"),
    "exec /tmp": (
        lambda i: i["HostConfig"].__setitem__("Tmpfs", {"/tmp": "rw,size=1"}),
        "HostConfig.Tmpfs",
    ),
    "a device": (
        lambda i: i["HostConfig"].__setitem__("Devices", [{"PathOnHost": "/dev/kvm"}]),
        "HostConfig.Devices",
    ),
    "extra hosts": (
        lambda i: i["HostConfig"].__setitem__("ExtraHosts", ["a:127.0.0.1"]),
        "HostConfig.ExtraHosts",
    ),
    "published ports": (
        lambda i: i["HostConfig"].__setitem__("PublishAllPorts", True),
        "HostConfig.PublishAllPorts",
    ),
    "init process": (lambda i: i["HostConfig"].__setitem__("Init", True), "HostConfig.Init"),
    "other command": (lambda i: i["Config"].__setitem__("Cmd", ["/bin/sh"]), "Config.Cmd"),
    "host pid": (lambda i: i["HostConfig"].__setitem__("PidMode", "host"), "HostConfig.PidMode"),
    "unmasked proc": (
        lambda i: i["HostConfig"].__setitem__("MaskedPaths", []),
        "HostConfig.MaskedPaths",
    ),
    "a log file": (
        lambda i: i["HostConfig"].__setitem__("LogConfig", {"Type": "json-file", "Config": {}}),
        "HostConfig.LogConfig",
    ),
}


@pytest.mark.parametrize("name", sorted(TAMPERINGS))
def test_verify_catches_each_tampered_field(name: str) -> None:
    tamper, field = TAMPERINGS[name]
    spec, inspect = captured("runc")
    tamper(inspect)
    assert field in verify(spec, inspect)


def test_an_empty_inspect_mismatches_everything() -> None:
    spec, _ = captured("runc")
    assert len(verify(spec, {})) > 20


def test_runsc_gets_the_pinned_profile_with_clone3_left_to_gvisor() -> None:
    """One rule differs, and only under runsc (the clone3 test in the conformance suite
    says why): everything else is the pinned file, rule for rule."""
    runc = json.loads(seccomp.profile_json("runc"))
    runsc = json.loads(seccomp.profile_json("runsc"))
    assert runc == json.loads(seccomp.profile_json())
    clone3 = [rule for rule in runc["syscalls"] if rule["names"] == ["clone3"]]
    assert [rule["errnoRet"] for rule in clone3] == [38, 89]  # ENOSYS, as Docker ships it
    others = [rule for rule in runc["syscalls"] if rule["names"] != ["clone3"]]
    assert runsc["syscalls"] == [*others, seccomp.GVISOR_CLONE3_RULE]
    assert {k: v for k, v in runsc.items() if k != "syscalls"} == {
        k: v for k, v in runc.items() if k != "syscalls"
    }
