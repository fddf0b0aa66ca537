"""PID 1's configuration: one canonical-JSON object, read from stdin, parsed strictly.

Every key is required and no other key is allowed (docs/SANDBOX_PROTOCOL.md). A
config that fails here is refused before anything is attested or forked.
"""

from __future__ import annotations

import math

from sandbox_supervisor import fastjson

# Plain classes with __slots__, not dataclasses (whose import pulls in inspect): PID 1
# parses this on every sandbox run and its start-up is on each run's path (issue 3).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PROTOCOL_VERSION = 1
RUNTIMES = ("runc", "runsc")
NONCE_LENGTH = 32
NONCE_DIGITS = frozenset("0123456789abcdef")
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
        "go_timeout_s",
        "workload_uid",
        "workload_gid",
        "judge",
        "expect",
    }
)
JUDGE_KEYS = frozenset({"input", "candidate_argv", "uid", "gid"})
MAX_JUDGE_INPUT_CHARS = 512 * 1024
EXPECT_KEYS = frozenset(
    {
        "uid",
        "gid",
        "capabilities",
        "memory_bytes",
        "pids",
        "nofile",
        "fsize_bytes",
        "tmpfs_bytes",
        "env",
        "workspace",
        "tmp",
        "canary",
        "deps",
    }
)
CANARY_KEYS = frozenset({"syscall", "errno"})
DEPS_KEYS = frozenset({"path", "manifest_sha256"})
SHA256_HEX_LENGTH = 64


class ConfigError(ValueError):
    """The config is not exactly what the protocol allows."""


class _Record:
    """Keyword-only construction of every slot, read-only afterwards, compared by value."""

    __slots__: tuple[str, ...] = ()

    def __init__(self, **fields: Any) -> None:
        if fields.keys() != set(self.__slots__):
            raise TypeError(f"{type(self).__name__} takes exactly {sorted(self.__slots__)}")
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self.__slots__)

    __hash__ = None  # type: ignore[assignment]  # holds dicts and lists

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({fields})"


class Canary(_Record):
    """The seccomp canary rule: ``syscall`` must fail with ``errno``."""

    __slots__ = ("errno", "syscall")
    syscall: int
    errno: int


class Deps(_Record):
    """A dependency environment mounted read-only at ``path`` (issue 17): its
    ``manifest.json`` must hash to ``manifest_sha256``."""

    __slots__ = ("manifest_sha256", "path")
    path: str
    manifest_sha256: str


class Expect(_Record):
    """What attestation compares the container with."""

    __slots__ = (
        "canary",
        "capabilities",
        "deps",
        "env",
        "fsize_bytes",
        "gid",
        "memory_bytes",
        "nofile",
        "pids",
        "tmp",
        "tmpfs_bytes",
        "uid",
        "workspace",
    )
    uid: int
    """PID 1's own uid (0: it drops every workload process to ``Config.workload_uid``)."""
    gid: int
    capabilities: int
    """PID 1's effective, permitted and bounding capability sets, exactly."""
    memory_bytes: int
    pids: int
    nofile: int
    fsize_bytes: int
    tmpfs_bytes: int
    env: dict[str, str]
    workspace: str
    tmp: str
    canary: Canary
    deps: Deps | None
    """The dependency environment the host mounted, or None: then nothing is mounted
    at ``sandbox_supervisor.deps.DEPS_ROOT``."""


class Judge(_Record):
    """A held-out check judged out of process: ``Config.argv`` is the judge, run as
    ``uid``:``gid`` with ``input`` on its stdin; ``candidate_argv`` the code under test's
    side, run as the workload's uid (``relay.Relay._fork_judge_and_candidate``)."""

    __slots__ = ("candidate_argv", "gid", "input", "uid")
    input: str
    candidate_argv: list[str]
    uid: int
    gid: int


class Config(_Record):
    """One run: the workload, its limits, and the expected isolation."""

    __slots__ = (
        "argv",
        "cwd",
        "deadline_s",
        "expect",
        "go_timeout_s",
        "judge",
        "kill_grace_s",
        "nonce",
        "output_budget",
        "runtime",
        "workload_env",
        "workload_gid",
        "workload_uid",
    )
    nonce: str
    runtime: str
    argv: list[str]
    cwd: str
    workload_env: dict[str, str]
    deadline_s: float
    kill_grace_s: float
    output_budget: int
    go_timeout_s: float
    """How long PID 1 waits, from its attestation, for the host's go (then forks nothing);
    a go that came in time is taken even if the runner's imports made ahead ran longer."""
    workload_uid: int
    """Every workload process runs as this uid, never PID 1's (``identity.drop_to``)."""
    workload_gid: int
    judge: Judge | None
    expect: Expect


def is_nonce(value: object) -> bool:
    """32 lowercase hex characters."""
    return isinstance(value, str) and len(value) == NONCE_LENGTH and NONCE_DIGITS.issuperset(value)


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
        return fastjson.loads(
            text, object_pairs_hook=_reject_duplicates, parse_constant=_reject_constant
        )
    except ConfigError:
        raise
    except ValueError as error:
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


def _judge(value: Any, workload_uid: int) -> Judge | None:
    if value is None:
        return None
    raw = _keys(value, JUDGE_KEYS, "judge")
    text = raw["input"]
    if not isinstance(text, str) or len(text) > MAX_JUDGE_INPUT_CHARS:
        raise ConfigError(f"judge.input must be a string of at most {MAX_JUDGE_INPUT_CHARS}")
    uid = _int(raw["uid"], "judge.uid", 1)
    if uid == workload_uid:
        raise ConfigError("judge.uid must differ from workload_uid")
    return Judge(
        input=text,
        candidate_argv=_argv(raw["candidate_argv"]),
        uid=uid,
        gid=_int(raw["gid"], "judge.gid", 1),
    )


def _deps(value: Any) -> Deps | None:
    if value is None:
        return None
    raw = _keys(value, DEPS_KEYS, "expect.deps")
    digest = raw["manifest_sha256"]
    if not (
        isinstance(digest, str)
        and len(digest) == SHA256_HEX_LENGTH
        and NONCE_DIGITS.issuperset(digest)
    ):
        raise ConfigError("expect.deps.manifest_sha256 must be 64 lowercase hex characters")
    return Deps(path=_path(raw["path"], "expect.deps.path"), manifest_sha256=digest)


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
        value = fastjson.loads(text)
    except ValueError:
        return None
    nonce = value.get("nonce") if isinstance(value, dict) else None
    return nonce if is_nonce(nonce) else None


def parse_config(text: str) -> Config:
    """Parse and validate PID 1's config.

    Raises:
        ConfigError: anything is missing, extra, mistyped or out of range.
    """
    top = _keys(_load(text), TOP_KEYS, "config")
    if _int(top["v"], "v") != PROTOCOL_VERSION:
        raise ConfigError(f"unsupported protocol version {top['v']} (this is {PROTOCOL_VERSION})")
    nonce = top["nonce"]
    if not is_nonce(nonce):
        raise ConfigError("nonce must be 32 lowercase hex characters")
    if top["runtime"] not in RUNTIMES:
        raise ConfigError(f"runtime must be one of {list(RUNTIMES)}")
    raw = _keys(top["expect"], EXPECT_KEYS, "expect")
    canary = _keys(raw["canary"], CANARY_KEYS, "expect.canary")
    expect = Expect(
        uid=_int(raw["uid"], "expect.uid"),
        gid=_int(raw["gid"], "expect.gid"),
        capabilities=_int(raw["capabilities"], "expect.capabilities"),
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
        deps=_deps(raw["deps"]),
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
        go_timeout_s=_float(top["go_timeout_s"], "go_timeout_s", positive=True),
        workload_uid=_int(top["workload_uid"], "workload_uid", 1),
        workload_gid=_int(top["workload_gid"], "workload_gid", 1),
        judge=_judge(top["judge"], top["workload_uid"]),
        expect=expect,
    )
