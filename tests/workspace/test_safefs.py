"""Safe file operations: lexical checks, the O_NOFOLLOW walk, races, and never leaving the root."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sandbox_agent import denials
from sandbox_agent.errors import ToolDenied
from sandbox_agent.workspace.paths import split_path
from sandbox_agent.workspace.safefs import PlannedWrite, SafeFS

SECRET = b"TOP-SECRET-OUTSIDE"


def build(tmp: Path) -> tuple[Path, Path]:
    """A workspace root with a sibling 'outside' folder holding a secret, and links to it."""
    root = tmp / "root"
    outside = tmp / "outside"
    (root / "dir" / "sub").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_bytes(SECRET)
    (root / "dir" / "file.txt").write_text("inside\n")
    (root / "dir" / "sub" / "deep.txt").write_text("deep\n")
    os.symlink(outside, root / "linkdir")
    os.symlink(outside / "secret.txt", root / "linkfile")
    os.symlink("../outside/secret.txt", root / "dir" / "rel")
    os.link(outside / "secret.txt", root / "hard.txt")
    os.mkfifo(root / "fifo")
    return root, outside


def code_of(call: object) -> str:
    assert callable(call)
    with pytest.raises(ToolDenied) as caught:
        call()
    return caught.value.code


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("/etc/passwd", denials.PATH_ABSOLUTE),
        ("../outside/secret.txt", denials.PATH_OUTSIDE_WORKSPACE),
        ("dir/../../outside/secret.txt", denials.PATH_OUTSIDE_WORKSPACE),
        ("dir/file.txt\x00", denials.PATH_INVALID),
        ("dir\\file.txt", denials.PATH_INVALID),
        ("dir//file.txt", denials.PATH_INVALID),
        ("cafe\u0301.txt", denials.PATH_INVALID),
        ("dir/\ud800", denials.PATH_INVALID),
        ("dir/\u202efile", denials.PATH_INVALID),
        ("", denials.PATH_INVALID),
        ("x" * 256, denials.PATH_INVALID),
    ],
)
def test_lexical_checks_come_first(path: str, code: str) -> None:
    assert code_of(lambda: split_path(path)) == code


def test_dot_components_and_a_trailing_slash_are_harmless() -> None:
    assert split_path("./dir/./file.txt") == ("dir", "file.txt")
    assert split_path("dir/", allow_root=True) == ("dir",)
    assert split_path("", allow_root=True) == ()


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("linkfile", denials.PATH_SYMLINK),
        ("linkdir/secret.txt", denials.PATH_SYMLINK),
        ("dir/rel", denials.PATH_SYMLINK),
        ("hard.txt", denials.PATH_HARDLINK),
        ("fifo", denials.PATH_SPECIAL_FILE),
        ("missing.txt", denials.PATH_NOT_FOUND),
        ("dir/file.txt/x", denials.PATH_NOT_FOUND),
        ("dir", denials.PATH_NOT_FOUND),
    ],
)
@pytest.mark.timeout(10)
def test_reads_refuse_links_hardlinks_and_special_files(
    tmp_path: Path, path: str, code: str
) -> None:
    root, _ = build(tmp_path)
    assert code_of(lambda: SafeFS(root).read_bytes(path, 1000)) == code


def test_reads_are_bounded(tmp_path: Path) -> None:
    root, _ = build(tmp_path)
    fs = SafeFS(root)
    assert fs.read_bytes("dir/file.txt", 7) == b"inside\n"
    assert code_of(lambda: fs.read_bytes("dir/file.txt", 6)) == denials.PATH_TOO_LARGE


def test_list_files_shows_regular_files_only(tmp_path: Path) -> None:
    root, _ = build(tmp_path)
    fs = SafeFS(root)
    assert fs.list_files("", 100).files == ["dir/file.txt", "dir/sub/deep.txt"]
    assert fs.list_files("dir/sub", 100).files == ["dir/sub/deep.txt"]
    listed = fs.list_files("", 1)
    assert listed.files == ["dir/file.txt"]
    assert listed.truncated
    assert code_of(lambda: fs.list_files("linkdir", 10)) == denials.PATH_SYMLINK


@pytest.mark.timeout(10)
def test_writes_refuse_links_and_never_touch_the_outside(tmp_path: Path) -> None:
    root, outside = build(tmp_path)
    fs = SafeFS(root)
    through_link = PlannedWrite("linkdir/new.txt", ("linkdir", "new.txt"), None, b"x")
    assert code_of(lambda: fs.commit([through_link])) == denials.PATH_SYMLINK
    over_link = PlannedWrite("linkfile", ("linkfile",), SECRET, b"x")
    assert code_of(lambda: fs.commit([over_link])) == denials.PATH_SYMLINK
    over_hard = PlannedWrite("hard.txt", ("hard.txt",), SECRET, b"x")
    assert code_of(lambda: fs.commit([over_hard])) == denials.PATH_HARDLINK
    create_on_link = PlannedWrite("linkfile", ("linkfile",), None, b"x")
    assert code_of(lambda: fs.commit([create_on_link])) == denials.PATCH_EXISTS
    assert sorted(os.listdir(outside)) == ["secret.txt"]
    assert (outside / "secret.txt").read_bytes() == SECRET


def test_a_symlink_swapped_in_between_check_and_open_is_refused(tmp_path: Path) -> None:
    """The race: 'dir' is a real folder when the path is checked, a link when it is opened."""
    root, outside = build(tmp_path)
    (outside / "file.txt").write_bytes(SECRET)
    swapped: list[str] = []

    def swap(_dir_fd: int, name: str) -> None:
        if name == "dir" and not swapped:
            shutil.rmtree(root / "dir")
            os.symlink(outside, root / "dir")
            swapped.append(name)

    fs = SafeFS(root, hook=swap)
    assert code_of(lambda: fs.read_bytes("dir/file.txt", 1000)) == denials.PATH_SYMLINK
    assert swapped == ["dir"]
    write = PlannedWrite("dir/file.txt", ("dir", "file.txt"), SECRET, b"pwned")
    assert code_of(lambda: fs.commit([write])) == denials.PATH_SYMLINK
    assert (outside / "file.txt").read_bytes() == SECRET


@pytest.mark.timeout(60)
def test_a_thread_racing_links_against_reads_never_escapes(tmp_path: Path) -> None:
    root, outside = build(tmp_path)
    (outside / "file.txt").write_bytes(SECRET)
    stop = threading.Event()

    def flip() -> None:
        spare = root / "dir-real"
        while not stop.is_set():
            os.rename(root / "dir", spare)
            os.symlink(outside, root / "dir")
            os.unlink(root / "dir")
            os.rename(spare, root / "dir")

    racer = threading.Thread(target=flip)
    racer.start()
    fs = SafeFS(root)
    seen: set[str] = set()
    try:
        for _ in range(3000):
            try:
                content = fs.read_bytes("dir/file.txt", 1000)
            except ToolDenied as denied:
                seen.add(denied.code)
                continue
            assert content == b"inside\n"
            seen.add("read")
    finally:
        stop.set()
        racer.join()
    assert seen <= {"read", denials.PATH_SYMLINK, denials.PATH_NOT_FOUND}


COMPONENTS = [
    "dir",
    "sub",
    "file.txt",
    "..",
    ".",
    "",
    "linkdir",
    "linkfile",
    "secret.txt",
    "outside",
    "hard.txt",
    "fifo",
    "dir\\..",
    "/",
    "%2e%2e",
    "\x00",
    "rel",
    "new.txt",
]


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(st.lists(st.sampled_from(COMPONENTS), min_size=1, max_size=6), min_size=1, max_size=5)
)
def test_no_sequence_of_paths_reads_or_writes_outside(
    tmp_path: Path, paths: list[list[str]]
) -> None:
    base = tmp_path / f"case-{os.urandom(4).hex()}"
    base.mkdir()
    root, outside = build(base)
    fs = SafeFS(root)
    for components in paths:
        path = "/".join(components)
        for attempt in (
            lambda path=path: fs.read_bytes(path, 10_000),
            lambda path=path: fs.list_files(path, 100),
            lambda path=path: list(fs.iter_files(path, 10_000)),
            lambda path=path: fs.commit([PlannedWrite(path, split_path(path), None, b"pwned")]),
        ):
            try:
                result = attempt()
            except ToolDenied:
                continue
            assert SECRET not in repr(result).encode()
    assert sorted(os.listdir(outside)) == ["secret.txt"]
    assert (outside / "secret.txt").read_bytes() == SECRET
    shutil.rmtree(base)
