"""PID 1's configuration: one canonical-JSON argv element, parsed strictly.

Every key is required and no other key is allowed (docs/SANDBOX_PROTOCOL.md). A
config that fails here is refused before anything is attested or forked.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

PROTOCOL_VERSION = 1
RUNTIMES = ("runc", "runsc")
NONCE_PATTERN = re.compile(r"[0-9a-f]{32}")
TOP_KEYS = frozenset(
    {
        "v",
        "nonce",
        "runtime",
        "argv",
        "cwd",
        "workload_env",
        "deadline_s",
        "kill_grace_s",
        "output_budget",
        "expect",
    }
)
EXPECT_KEYS = frozenset(
    {
        "uid",
        "gid",
        "memory_bytes",
        "pids",
        "nofile",
        "fsize_bytes",
        "tmpfs_bytes",
        "env",
        "workspace",
        "tmp",
        "canary",
    }
)
CANARY_KEYS = frozenset({"syscall", "errno"})


class ConfigError(ValueError):
    """The config is not exactly what the protocol allows."""


@dataclass(frozen=True)
class Canary:
    """The seccomp canary rule: ``syscall`` must fail with ``errno``."""

    syscall: int
    errno: int


@dataclass(frozen=True)
class Expect:
    """What attestation compares the container with."""

    uid: int
    gid: int
    memory_bytes: int
    pids: int
    nofile: int
    fsize_bytes: int
    tmpfs_bytes: int
    env: dict[str, str]
    workspace: str
    tmp: str
    canary: Canary


@dataclass(frozen=True)
class Config:
    """One run: the workload, its limits, and the expected isolation."""

    nonce: str
    runtime: str
    argv: list[str]
    cwd: str
    workload_env: dict[str, str]
    deadline_s: float
    kill_grace_s: float
    output_budget: int
    expect: Expect


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ConfigError(f"duplicate key {key!r}")
        result[key] = value
    return result


def _reject_constant(name: str) -> Any:
    raise ConfigError(f"non-finite number {name}")


def _load(text: str) -> Any:
    try:
        return json.loads(
            text, object_pairs_hook=_reject_duplicates, parse_constant=_reject_constant
        )
    except json.JSONDecodeError as error:
        raise ConfigError(f"not JSON: {error}") from error


def _keys(value: Any, keys: frozenset[str], where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be an object")
    missing = sorted(keys - value.keys())
    extra = sorted(value.keys() - keys)
    if missing or extra:
        raise ConfigError(f"{where}: missing keys {missing}, unknown keys {extra}")
    return value


def _int(value: Any, where: str, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{where} must be an integer >= {minimum}")
    return value


def _float(value: Any, where: str, *, positive: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{where} must be a number")
    number = float(value)
    if not math.isfinite(number) or number < 0 or (positive and number == 0):
        raise ConfigError(f"{where} must be a finite number {'> 0' if positive else '>= 0'}")
    return number


def _path(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.startswith("/") or "\0" in value:
        raise ConfigError(f"{where} must be an absolute path")
    return value


def _env(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be an object of strings")
    for key, item in value.items():
        if not key or "=" in key or "\0" in key:
            raise ConfigError(f"{where}: invalid variable name {key!r}")
        if not isinstance(item, str) or "\0" in item:
            raise ConfigError(f"{where}[{key!r}] must be a string without NUL")
    return dict(value)


def _argv(value: Any) -> list[str]:
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(arg, str) and "\0" not in arg for arg in value)
        or not value[0]
    ):
        raise ConfigError("argv must be a non-empty list of strings without NUL")
    return list(value)


def read_nonce(text: str) -> str | None:
    """The config's nonce if it can be read at all, so a refusal can still be tagged."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    nonce = value.get("nonce") if isinstance(value, dict) else None
    return nonce if isinstance(nonce, str) and NONCE_PATTERN.fullmatch(nonce) else None


def parse_config(text: str) -> Config:
    """Parse and validate PID 1's config.

    Raises:
        ConfigError: anything is missing, extra, mistyped or out of range.
    """
    top = _keys(_load(text), TOP_KEYS, "config")
    if _int(top["v"], "v") != PROTOCOL_VERSION:
        raise ConfigError(f"unsupported protocol version {top['v']} (this is {PROTOCOL_VERSION})")
    nonce = top["nonce"]
    if not isinstance(nonce, str) or not NONCE_PATTERN.fullmatch(nonce):
        raise ConfigError("nonce must be 32 lowercase hex characters")
    if top["runtime"] not in RUNTIMES:
        raise ConfigError(f"runtime must be one of {list(RUNTIMES)}")
    raw = _keys(top["expect"], EXPECT_KEYS, "expect")
    canary = _keys(raw["canary"], CANARY_KEYS, "expect.canary")
    expect = Expect(
        uid=_int(raw["uid"], "expect.uid"),
        gid=_int(raw["gid"], "expect.gid"),
        memory_bytes=_int(raw["memory_bytes"], "expect.memory_bytes", 1),
        pids=_int(raw["pids"], "expect.pids", 1),
        nofile=_int(raw["nofile"], "expect.nofile", 1),
        fsize_bytes=_int(raw["fsize_bytes"], "expect.fsize_bytes", 1),
        tmpfs_bytes=_int(raw["tmpfs_bytes"], "expect.tmpfs_bytes", 1),
        env=_env(raw["env"], "expect.env"),
        workspace=_path(raw["workspace"], "expect.workspace"),
        tmp=_path(raw["tmp"], "expect.tmp"),
        canary=Canary(
            syscall=_int(canary["syscall"], "expect.canary.syscall"),
            errno=_int(canary["errno"], "expect.canary.errno", 1),
        ),
    )
    return Config(
        nonce=nonce,
        runtime=top["runtime"],
        argv=_argv(top["argv"]),
        cwd=_path(top["cwd"], "cwd"),
        workload_env=_env(top["workload_env"], "workload_env"),
        deadline_s=_float(top["deadline_s"], "deadline_s", positive=True),
        kill_grace_s=_float(top["kill_grace_s"], "kill_grace_s", positive=False),
        output_budget=_int(top["output_budget"], "output_budget"),
        expect=expect,
    )
