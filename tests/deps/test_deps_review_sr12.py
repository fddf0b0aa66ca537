"""SR-12 (issue 28): a repository's declarations must not command the host.

Each test plays the author of a hostile repository against a loopback index standing in
for their host (``deps_wheels.serve_index``), and a temporary folder standing in for a
shared ``/tmp``. The claims: no code from a declaration runs on the host, no address a
declaration names is contacted, no lock but the repository's is read, amplification is
refused before it costs anything, and a size bomb is refused before it is unpacked.
"""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from deps_wheels import FakeIndex, make_wheel, serve_index

from sandbox_agent.deps import DepsOptions, prepare_environment
from sandbox_agent.deps.uvcmd import uv_binary
from sandbox_agent.errors import DependencyError

MiB = 1024 * 1024
HANG_GUARD_S = 120.0
"""Only a hang detector for the amplification cases (the old code never finished); the
fixed code answers in milliseconds, which a benchmark, not this test, would measure."""


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def make_backend_sdist(folder: Path, name: str, version: str, marker: Path) -> Path:
    """An sdist whose in-tree build backend, once imported by any frontend, writes
    ``marker``: the proof that the host ran the author's code."""
    base = f"{name}-{version}"
    path = folder / f"{base}.tar.gz"
    members = {
        f"{base}/pyproject.toml": (
            '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n'
            f'[project]\nname = "{name}"\nversion = "{version}"\n'
        ),
        f"{base}/backend.py": f"open({str(marker)!r}, 'w').write('ran')\n",
        f"{base}/PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
    }
    with tarfile.open(path, "w:gz") as archive:
        for member, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(member)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


@pytest.fixture(scope="module")
def marker(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("proof") / "backend-ran"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory, marker: Path) -> Iterator[FakeIndex]:
    files = tmp_path_factory.mktemp("index")
    make_wheel(files, "alpha", "1.0", {"alpha/__init__.py": "X = 1\n"})
    make_wheel(files, "beta", "1.0", {"beta/__init__.py": ""})
    make_backend_sdist(files, "evil", "1.0", marker)
    bomb = make_wheel(files, "bomb", "1.0", {"bomb/__init__.py": ""})
    with (
        zipfile.ZipFile(bomb, "a", compression=zipfile.ZIP_DEFLATED) as archive,
        archive.open("bomb/zeros.bin", "w", force_zip64=True) as member,
    ):
        for _ in range(200):
            member.write(bytes(MiB))
    with serve_index(files) as served:
        yield served


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, marker: Path) -> None:
    marker.unlink(missing_ok=True)  # each case proves its own run
    monkeypatch.setenv("SANDBOX_AGENT_DEPS_HOME", str(tmp_path / "deps-home"))
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir(exist_ok=True)
    return repo


def _refused_before_any_request(
    repo: Path, index: FakeIndex, marker: Path, says: str = ""
) -> DependencyError:
    asked = len(index.requests)
    with pytest.raises(DependencyError) as raised:
        prepare_environment(repo, DepsOptions(index_url=index.url))
    assert not marker.exists(), "the host ran the author's build backend"
    assert index.requests[asked:] == [], "the host contacted the index for a refused input"
    assert raised.value.kind == "declaration", str(raised.value)
    assert "\n" not in str(raised.value)
    assert says in str(raised.value)
    return raised.value


# ------------------------------------------------------------------ D1: lines passed on


def _evil_url(index: FakeIndex) -> str:
    return index.url.removesuffix("/simple") + "/files/evil-1.0.tar.gz"


def _pylock(repo: Path, package: str) -> None:
    (repo / "pylock.toml").write_text(
        f'lock-version = "1.0"\ncreated-by = "test"\n[[packages]]\n{package}\n'
    )


def _toml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def test_d1_a_pylock_version_cannot_add_option_lines(
    index: FakeIndex, marker: Path, tmp_path: Path
) -> None:
    beta = _sha256(next(index.folder.glob("beta-1.0-*.whl")))
    evil = _sha256(index.folder / "evil-1.0.tar.gz")
    version = f"1.0 --hash=sha256:{beta}\n--no-binary evil\nevil @ {_evil_url(index)}"
    repo = _repo(tmp_path)
    _pylock(
        repo,
        f'name = "beta"\nversion = {_toml_string(version)}\n'
        f'wheels = [{{name = "beta-1.0-py3-none-any.whl", hashes = {{sha256 = "{evil}"}}}}]',
    )
    _refused_before_any_request(repo, index, marker, "pylock.toml")


@pytest.mark.parametrize(
    "field",
    [
        'name = "beta\\n--find-links {files}"\nversion = "1.0"',
        'name = "beta"\nversion = "1.0"\n'
        'marker = "os_name == \\"posix\\"\\n--extra-index-url {files}"',
        'name = "beta"\nversion = "1.0"\nmarker = "os_name == \\"posix --index-url {files}\\""',
        'name = "beta"\nversion = "1.0 ; os_name == \\"posix\\""',
        'name = "../beta"\nversion = "1.0"',
    ],
    ids=["name-newline", "marker-newline", "marker-option", "version-marker", "name-path"],
)
def test_d1_every_pylock_field_is_parsed_not_copied(
    index: FakeIndex, marker: Path, tmp_path: Path, field: str
) -> None:
    beta = _sha256(next(index.folder.glob("beta-1.0-*.whl")))
    files = index.url.removesuffix("/simple") + "/files/"
    repo = _repo(tmp_path)
    _pylock(
        repo,
        field.replace("{files}", files)
        + f'\nwheels = [{{name = "beta-1.0-py3-none-any.whl", hashes = {{sha256 = "{beta}"}}}}]',
    )
    _refused_before_any_request(repo, index, marker, "pylock.toml")


@pytest.mark.parametrize(
    "digest",
    ["{beta}\\n--no-binary evil", "{beta} --find-links x", "{beta}0", "sha256:{beta}"],
    ids=["newline", "option", "65-digits", "prefixed"],
)
def test_d1_a_pylock_hash_is_64_hex_digits(
    index: FakeIndex, marker: Path, tmp_path: Path, digest: str
) -> None:
    beta = _sha256(next(index.folder.glob("beta-1.0-*.whl")))
    repo = _repo(tmp_path)
    _pylock(
        repo,
        'name = "beta"\nversion = "1.0"\n'
        f'wheels = [{{name = "b.whl", hashes = {{sha256 = "{digest.format(beta=beta)}"}}}}]',
    )
    _refused_before_any_request(repo, index, marker, "pylock.toml")


def test_d1_a_declared_marker_cannot_carry_a_line_to_the_resolver(
    index: FakeIndex, marker: Path, tmp_path: Path
) -> None:
    repo = _repo(tmp_path)
    planted = f'os_name == "posix\\n--no-binary evil\\nevil @ {_evil_url(index)}"'
    (repo / "pyproject.toml").write_text(
        '[project]\nname = "calc"\nversion = "0"\n'
        f"dependencies = [{_toml_string('beta ; ' + planted)}]\n"
    )
    _refused_before_any_request(repo, index, marker, "pyproject.toml")


def test_d1_a_stored_resolution_is_checked_again_before_install(
    index: FakeIndex, marker: Path, tmp_path: Path
) -> None:
    from sandbox_agent.deps import store
    from sandbox_agent.deps.declared import read_declaration
    from sandbox_agent.deps.resolve import Resolution, resolution_key
    from sandbox_agent.deps.target import runner_target

    repo = _repo(tmp_path)
    (repo / "requirements.txt").write_text("beta\n")
    beta = _sha256(next(index.folder.glob("beta-1.0-*.whl")))
    evil = _sha256(index.folder / "evil-1.0.tar.gz")
    poisoned = (
        f"beta==1.0 --hash=sha256:{beta}\n--no-binary evil\n"
        f"evil @ {_evil_url(index)} --hash=sha256:{evil}\n"
    )
    key = resolution_key(read_declaration(repo), runner_target(), index.url)
    path = store.resolution_path(key)
    path.parent.mkdir(parents=True)
    body = Resolution.model_construct(text=poisoned, source="resolved", target=runner_target())
    path.write_text(body.model_dump_json())
    # Read back, the poisoned record is refused and the declaration resolved again.
    environment = prepare_environment(repo, DepsOptions(index_url=index.url))
    assert environment is not None
    assert [p.name for p in environment.packages] == ["beta"]
    assert not marker.exists(), "the host ran the author's build backend"
    assert not any("evil" in request for request in index.requests)


# ------------------------------------------------------------- D2: a lock from elsewhere


def test_d2_a_lock_planted_in_the_shared_temporary_folder_is_never_read(
    index: FakeIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uv = uv_binary()
    project = '[project]\nname = "calc"\nversion = "0"\nrequires-python = ">=3.11"\n'
    repo = _repo(tmp_path)
    (repo / "pyproject.toml").write_text(project + 'dependencies = ["beta"]\n')
    lock = [uv, "lock", "--no-config", "--index-url", index.url]
    subprocess.run(lock, cwd=repo, check=True, capture_output=True)
    shared = tmp_path / "shared-tmp"  # another local user's files in a shared /tmp
    seed = shared / "sandbox-agent-resolve-seed"
    seed.mkdir(parents=True)
    (shared / "pyproject.toml").write_text(
        '[project]\nname = "root"\nversion = "0"\nrequires-python = ">=3.11"\n'
        '[tool.uv.workspace]\nmembers = ["sandbox-agent-resolve-*"]\n'
    )
    (seed / "pyproject.toml").write_text(project + 'dependencies = ["alpha"]\n')
    subprocess.run(lock, cwd=shared, check=True, capture_output=True)
    (seed / "pyproject.toml").unlink()
    seed.rmdir()
    monkeypatch.setenv("TMPDIR", str(shared))
    monkeypatch.setattr(tempfile, "tempdir", None)
    environment = prepare_environment(repo, DepsOptions(index_url=index.url))
    assert environment is not None
    assert [p.name for p in environment.packages] == ["beta"]


def test_d2_a_uv_lock_installs_only_its_own_packages(index: FakeIndex, tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    (repo / "pyproject.toml").write_text(
        '[project]\nname = "calc"\nversion = "0"\nrequires-python = ">=3.11"\n'
        'dependencies = ["beta"]\n[project.optional-dependencies]\ntest = ["alpha"]\n'
    )
    subprocess.run(
        [uv_binary(), "lock", "--no-config", "--index-url", index.url],
        cwd=repo,
        check=True,
        capture_output=True,
    )
    text = (repo / "uv.lock").read_text()
    (repo / "uv.lock").write_text(text.replace('{ name = "beta" }', '{ name = "gamma" }', 1))
    with pytest.raises(DependencyError) as raised:
        prepare_environment(repo, DepsOptions(index_url=index.url))
    assert raised.value.kind == "declaration"
    assert "gamma" in str(raised.value)


# ------------------------------------------------------------------- D3: amplification


def _in_a_child(repo: Path, index: FakeIndex) -> subprocess.CompletedProcess[str]:
    """prepare_environment in a child process, so an old, unbounded expansion is ended by
    the hang guard instead of taking the test run with it."""
    code = (
        "import sys\n"
        "from sandbox_agent.deps import DepsOptions, prepare_environment\n"
        "from sandbox_agent.errors import DependencyError\n"
        "try:\n"
        f"    prepare_environment(__import__('pathlib').Path({str(repo)!r}),"
        f" DepsOptions(index_url={index.url!r}))\n"
        "except DependencyError as error:\n"
        "    print(error.kind, error, sep='|')\n"
        "else:\n"
        "    print('made|')\n"
    )
    try:
        return subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            check=False,
            text=True,
            timeout=HANG_GUARD_S,
            env={**os.environ},
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"the declarations were still being expanded after {HANG_GUARD_S:g} s")


def test_d3_requirement_includes_are_read_once(index: FakeIndex, tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    levels = 6
    for level in range(levels):
        (repo / f"requirements-{level}.in").write_text(f"-r requirements-{level + 1}.in\n" * 40)
    (repo / f"requirements-{levels}.in").write_text("beta\n")
    (repo / "requirements.txt").write_text("-r requirements-0.in\n")
    done = _in_a_child(repo, index)
    assert done.returncode == 0, done.stderr[-2000:]
    kind = done.stdout.split("|", 1)[0]
    assert kind in ("made", "declaration"), done.stdout


def test_d3_dependency_group_includes_are_expanded_once(index: FakeIndex, tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    groups = ["[dependency-groups]", 'test = ["beta", ' + '{include-group = "g0"}, ' * 30 + "]"]
    for level in range(13):
        groups.append(f"g{level} = [" + f'{{include-group = "g{level + 1}"}}, ' * 30 + "]")
    groups.append('g13 = ["alpha"]')
    (repo / "pyproject.toml").write_text(
        '[project]\nname = "calc"\nversion = "0"\n' + "\n".join(groups) + "\n"
    )
    done = _in_a_child(repo, index)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("|", 1)[0] in ("made", "declaration"), done.stdout


def test_d3_an_include_loop_is_named_as_a_loop(index: FakeIndex, tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    (repo / "requirements.txt").write_text("-r more.in\n")
    (repo / "more.in").write_text("beta\n-r requirements.txt\n")
    error = _refused_before_any_request(repo, index, tmp_path / "no-marker", "loop")
    assert "requirements.txt" in str(error)


def test_d3_the_declaration_phase_has_its_own_time_limit(tmp_path: Path) -> None:
    import socket

    repo = _repo(tmp_path)
    (repo / "requirements.txt").write_text("beta\n")
    silent = socket.socket()  # accepts connections, never answers
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)
    try:
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/simple"
        with pytest.raises(DependencyError) as raised:
            prepare_environment(repo, DepsOptions(index_url=url, timeout_s=2.0))
    finally:
        silent.close()
    assert raised.value.kind == "timeout"
    assert "--deps-timeout" in str(raised.value)


# --------------------------------------------------------- D4: sizes before unpacking


def _tree_bytes(root: Path) -> int:
    return sum(
        (Path(folder) / name).lstat().st_size
        for folder, _dirs, files in os.walk(root)
        for name in files
    )


def test_d4_a_size_bomb_is_refused_before_it_is_unpacked(index: FakeIndex, tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    (repo / "requirements.txt").write_text("bomb\n")
    with pytest.raises(DependencyError) as raised:
        prepare_environment(repo, DepsOptions(index_url=index.url, max_bytes=10 * MiB))
    assert raised.value.kind == "too_large"
    assert "--deps-max-bytes" in str(raised.value)
    left = _tree_bytes(tmp_path / "deps-home") + _tree_bytes(tmp_path / "uv-cache")
    assert left < 2 * MiB, f"{left / MiB:.0f} MiB left behind by a refused environment"


def test_d1_an_evaluation_suites_pinned_resolution_is_pins_alone(tmp_path: Path) -> None:
    from sandbox_agent.deps.environment import pin_resolution

    repo = _repo(tmp_path)
    (repo / "requirements.txt").write_text("beta\n")
    digest = "a" * 64
    with pytest.raises(DependencyError) as raised:
        pin_resolution(repo, f"beta==1.0 --hash=sha256:{digest}\n--find-links /x\n")
    assert raised.value.kind == "declaration"
    pin_resolution(repo, f"beta==1.0 --hash=sha256:{digest}\n")


def test_d1_the_committed_realrepos_resolutions_are_pins_alone() -> None:
    import json

    from sandbox_agent.deps.pins import check_resolution
    from sandbox_agent.settings import PROJECT_ROOT

    suite = json.loads((PROJECT_ROOT / "evals" / "realrepos" / "tasks.json").read_text())
    for project in suite["projects"]:
        if project["resolution"]:
            assert check_resolution(project["resolution"], project["name"])
