"""``llama-server``, compiled from the pinned llama.cpp tree, cached by source and flags.

Only ``vendor/llama.cpp`` of the pinned sdist is extracted (``tarfile``'s ``data``
filter: no links out of the tree, no devices, no absolute paths), configured with cmake
(static libraries, the instruction sets of ``cpu.py``, no web UI, no download of
prebuilt UI assets, no TLS, no tests or examples) and only the ``llama-server`` target
is built. The binary goes to ``builds/<key>/`` where the key hashes the source's
sha256 and every cmake option, with a ``build.json`` record; source and objects are
deleted. About 4.5 minutes on 2 cores.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from sandbox_agent.errors import SetupError
from sandbox_agent.localmodel import pins, pypi
from sandbox_agent.localmodel.cpu import host_isa_options

BUILD_RECORD = "build.json"
BUILD_TIMEOUT_SECONDS = 3600.0
"""The whole compile; on 2 cores it takes about 270 s."""
FIXED_OPTIONS: dict[str, str] = {
    "CMAKE_BUILD_TYPE": "Release",
    "BUILD_SHARED_LIBS": "OFF",
    "LLAMA_BUILD_TESTS": "OFF",
    "LLAMA_BUILD_EXAMPLES": "OFF",
    # The web UI is not needed, and its prebuilt assets would be downloaded from a hub.
    "LLAMA_BUILD_UI": "OFF",
    "LLAMA_USE_PREBUILT_UI": "OFF",
    # The server listens on loopback only: no TLS, and no libssl needed to build.
    "LLAMA_OPENSSL": "OFF",
    "GGML_CCACHE": "OFF",
}
FAILED_LOG_LINES = 3

Say = Callable[[str], None]


class BuildRecord(BaseModel):
    """What one cached build is: recorded next to the binary as ``build.json``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str
    """sha256 of the source's sha256 and the cmake options."""
    source_sha256: str
    options: dict[str, str]
    """Every ``-D`` option given to cmake."""
    server_version: str
    """The first line of ``llama-server --version``."""
    build_seconds: float
    built_at: str


def build_options(isa: dict[str, bool] | None = None) -> dict[str, str]:
    """The cmake options of a build for this machine (or for ``isa``)."""
    chosen = host_isa_options() if isa is None else isa
    options = dict(FIXED_OPTIONS)
    options.update({name: "ON" if on else "OFF" for name, on in sorted(chosen.items())})
    return options


def build_key(source_sha256: str, options: dict[str, str]) -> str:
    """The cache key: the source's hash and the options, in a canonical form."""
    text = json.dumps({"source": source_sha256, "options": options}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def server_binary(build_dir: Path) -> Path:
    return build_dir / pins.SERVER_TARGET


def find_build(builds: Path, options: dict[str, str]) -> tuple[Path, BuildRecord] | None:
    """The cached build for these options, when it is complete."""
    folder = builds / build_key(pins.SOURCE.sha256, options)
    try:
        record = BuildRecord.model_validate_json((folder / BUILD_RECORD).read_text())
    except (OSError, ValueError):
        return None
    binary = server_binary(folder)
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        return None
    return binary, record


def ensure_server_build(
    builds: Path,
    downloads: Path,
    *,
    index: str,
    options: dict[str, str] | None = None,
    say: Say = lambda _: None,
) -> tuple[Path, BuildRecord]:
    """The built ``llama-server`` for this machine: from the cache, or compiled now.

    Raises:
        SetupError: cmake or a compiler is missing, the source cannot be fetched or
            does not match its pin, or the build failed (the log is kept and named).
    """
    chosen = build_options() if options is None else options
    found = find_build(builds, chosen)
    if found is not None:
        return found
    for tool in ("cmake", "c++"):
        if shutil.which(tool) is None:
            raise SetupError(
                f"{tool} is not installed: install cmake and g++ "
                "(apt-get install cmake g++; 'make model' does it as root)"
            )
    sdist = pypi.download(pins.SOURCE, downloads / pins.SOURCE.filename, index=index)
    key = build_key(pins.SOURCE.sha256, chosen)
    builds.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f".build-{key}-", dir=builds) as scratch:
        work = Path(scratch)
        say(f"server: extracting {pins.SOURCE_TREE} from {pins.SOURCE.filename}")
        source = extract_tree(sdist, pins.SOURCE_TREE, work / "src")
        staged = work / "out"
        staged.mkdir()
        say(f"server: compiling {pins.SERVER_TARGET} (about 4.5 min on 2 cores)")
        compiled = compile_server(source, work / "build", chosen, builds / f"{key}.failed.log")
        shutil.copy2(compiled, server_binary(staged))
        record = BuildRecord(
            key=key,
            source_sha256=pins.SOURCE.sha256,
            options=chosen,
            server_version=server_version(server_binary(staged)),
            build_seconds=round(time.monotonic() - began, 1),
            built_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        )
        (staged / BUILD_RECORD).write_text(record.model_dump_json(indent=2))
        final = builds / key
        if final.exists():
            shutil.rmtree(final)
        os.replace(staged, final)
    (builds / f"{key}.failed.log").unlink(missing_ok=True)
    return server_binary(final), record


def extract_tree(sdist: Path, tree: str, destination: Path) -> Path:
    """Extract the members under ``tree`` only, safely; returns the extracted folder.

    Raises:
        SetupError: the archive is unreadable, lacks ``tree``, or holds a member the
            ``data`` filter refuses.
    """
    prefix = tree.rstrip("/") + "/"
    try:
        with tarfile.open(sdist, "r:gz") as archive:
            members = [m for m in archive.getmembers() if m.name.startswith(prefix)]
            if not members:
                raise SetupError(f"{sdist.name} has no {tree}: not the pinned source")
            archive.extractall(destination, members=members, filter="data")
    except (tarfile.TarError, OSError) as error:
        raise SetupError(
            f"cannot extract {sdist.name} ({type(error).__name__}): "
            "delete it and run 'make model' again"
        ) from None
    return destination / tree


def compile_server(source: Path, build: Path, options: dict[str, str], log: Path) -> Path:
    """Configure and build the one target; the compiled binary's path.

    Raises:
        SetupError: cmake failed or timed out; the log is kept at ``log``.
    """
    configure = ["cmake", "-S", str(source), "-B", str(build)]
    configure += [f"-D{name}={value}" for name, value in options.items()]
    compile_ = ["cmake", "--build", str(build), "--target", pins.SERVER_TARGET]
    compile_ += ["-j", str(os.cpu_count() or 1)]
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w", encoding="utf-8") as sink:
        for step in (configure, compile_):
            try:
                done = subprocess.run(
                    step,
                    stdout=sink,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    timeout=BUILD_TIMEOUT_SECONDS,
                    check=False,
                    env=_build_environment(),
                )
            except subprocess.TimeoutExpired:
                raise SetupError(
                    f"building llama-server took over {BUILD_TIMEOUT_SECONDS:.0f} s; log: {log}"
                ) from None
            if done.returncode != 0:
                sink.flush()
                raise SetupError(
                    f"building llama-server failed ({last_error_line(log)}); full log: {log}"
                )
    for candidate in (build / "bin" / pins.SERVER_TARGET, build / pins.SERVER_TARGET):
        if candidate.is_file():
            return candidate
    raise SetupError(f"the build made no {pins.SERVER_TARGET} binary; log: {log}")


def _build_environment() -> dict[str, str]:
    # llama.cpp's cmake reads HF_UI_VERSION and LLAMA_* from the environment: only the
    # tool paths and the locale are passed on.
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "CC", "CXX")
    return {name: os.environ[name] for name in keep if name in os.environ}


def last_error_line(log: Path) -> str:
    """The most telling line of a failed build's log: its last ``error`` line, else its last."""
    try:
        lines = [line.strip() for line in log.read_text(errors="replace").splitlines()]
    except OSError:
        return "no log"
    lines = [line for line in lines if line]
    errors = [line for line in lines if "error" in line.lower()]
    chosen = (errors or lines or ["no output"])[-1]
    return chosen[:200]


def server_version(binary: Path) -> str:
    """The first line of ``llama-server --version`` (it prints to stderr).

    Raises:
        SetupError: the binary does not run.
    """
    try:
        done = subprocess.run(
            [str(binary), "--version"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
            env={},
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise SetupError(f"the built {binary.name} does not run ({type(error).__name__})") from None
    lines = [line.strip() for line in (done.stderr + done.stdout).splitlines() if line.strip()]
    versions = [line for line in lines if line.startswith("version")]
    return (versions or lines or ["unknown"])[0][:120]
