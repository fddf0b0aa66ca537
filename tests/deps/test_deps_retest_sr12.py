"""SR-12's outside retest (R1-R6): what the first fix left unbounded or unclean.

The host compiles an environment's bytecode ahead (``deps.build.compile_bytecode``); a
tiny wheel can make that compile write hundreds of MB, run for minutes or take
gigabytes of memory, outside every limit the phase claims. Hostile declarations must
end in one ``declaration`` line, never a traceback; a failure must leave nothing in the
store.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from deps_wheels import FakeIndex, make_wheel, serve_index

from sandbox_agent.deps import DepsOptions, prepare_environment
from sandbox_agent.errors import DependencyError

MiB = 1024 * 1024
HANG_GUARD_S = 240.0
"""A hang detector for the old code's compile (minutes); the fixed one answers in seconds."""

FOLDING_LINES = 600
"""Lines of ``x='L'+'a'*4096+...`` (16 terms): constant folding makes each a 64 KiB
string in the ``.pyc``; 600 lines are 39 MB of bytecode from 93 KB of source, compiled
in half a second within the compile's memory limit."""


def _folding_source(lines: int, terms: int = 16) -> str:
    return "".join(f"x{i}='L{i}'" + "+'a'*4096" * terms + "\n" for i in range(lines))


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeIndex]:
    files = tmp_path_factory.mktemp("index")
    make_wheel(files, "alpha", "1.0", {"alpha/__init__.py": "X = 1\n"})
    make_wheel(
        files,
        "pycbomb",
        "1.0",
        {"pycbomb/__init__.py": "", "pycbomb/big.py": _folding_source(FOLDING_LINES)},
    )
    module = "".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(2000))
    slow = {f"slowc/m{n}.py": module for n in range(200)}  # seconds to compile, small output
    make_wheel(files, "slowc", "1.0", {"slowc/__init__.py": "", **slow})
    make_wheel(
        files, "hungry", "1.0", {"hungry/__init__.py": "", "hungry/big.py": "x=1\n" * 1_250_000}
    )
    with serve_index(files) as served:
        yield served


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SANDBOX_AGENT_DEPS_HOME", str(tmp_path / "deps-home"))
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))


def _repo(tmp_path: Path, requirements: str) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir(exist_ok=True)
    (repo / "requirements.txt").write_text(requirements)
    return repo


def _tree_bytes(root: Path) -> int:
    return sum(
        (Path(folder) / name).lstat().st_size
        for folder, _dirs, files in os.walk(root)
        for name in files
    )


def _in_a_child(code: str) -> subprocess.CompletedProcess[str]:
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
        pytest.fail(f"the dependency phase was still running after {HANG_GUARD_S:g} s")


def _prepare_in_a_child(repo: Path, index: FakeIndex, **options: object) -> str:
    """prepare_environment in a child: ``kind|message|peak child RSS in KiB``."""
    code = (
        "import resource, pathlib\n"
        "from sandbox_agent.deps import DepsOptions, prepare_environment\n"
        "from sandbox_agent.errors import DependencyError\n"
        "try:\n"
        f"    env = prepare_environment(pathlib.Path({str(repo)!r}),"
        f" DepsOptions(index_url={index.url!r}, **{options!r}))\n"
        "    outcome = f'made|{env.size_bytes if env else 0}'\n"
        "except DependencyError as error:\n"
        "    outcome = f'{error.kind}|{error}'\n"
        "print(outcome, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, sep='|')\n"
    )
    done = _in_a_child(code)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


# ------------------------------------------- R1-R3: the bytecode compile is bounded too


def test_r1_bytecode_counts_in_the_size_limit(index: FakeIndex, tmp_path: Path) -> None:
    repo = _repo(tmp_path, "pycbomb==1.0\n")
    with pytest.raises(DependencyError) as raised:
        prepare_environment(repo, DepsOptions(index_url=index.url, max_bytes=10 * MiB))
    assert raised.value.kind == "too_large"
    assert "--deps-max-bytes" in str(raised.value)
    left = _tree_bytes(tmp_path / "deps-home") + _tree_bytes(tmp_path / "uv-cache")
    assert left < 4 * MiB, f"{left / MiB:.0f} MiB left behind by a refused environment"


def test_r2_the_compile_ends_with_the_phase(index: FakeIndex, tmp_path: Path) -> None:
    repo = _repo(tmp_path, "slowc==1.0\n")
    outcome = _prepare_in_a_child(repo, index, timeout_s=4.0, max_bytes=512 * MiB)
    assert outcome.split("|")[0] == "timeout", outcome


def test_r3_the_compile_has_a_memory_limit(index: FakeIndex, tmp_path: Path) -> None:
    repo = _repo(tmp_path, "hungry==1.0\n")
    outcome = _prepare_in_a_child(repo, index, max_bytes=64 * MiB)
    kind, _message, peak_kib = outcome.split("|")
    assert kind in ("made", "too_large"), outcome
    assert int(peak_kib) * 1024 < 1536 * MiB, outcome  # the old compile took ~2 GiB


# --------------------------------------------------- R4, R6: one line, never a traceback


def _pyproject(repo: Path, text: str) -> None:
    (repo / "pyproject.toml").write_text(text)


@pytest.mark.parametrize(
    "case",
    ["self-extra-chain", "pylock-huge-version", "requires-python-huge", "requires-python-newline"],
)
def test_r4_hostile_declarations_are_one_line_not_a_traceback(
    index: FakeIndex, tmp_path: Path, case: str
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    huge = "1" + "0" * 5000
    if case == "self-extra-chain":
        extras = "".join(f'e{n} = ["me[e{n + 1}]"]\n' for n in range(600))
        _pyproject(
            repo,
            '[project]\nname = "me"\nversion = "0"\ndependencies = ["me[e0]"]\n'
            f"[project.optional-dependencies]\n{extras}e600 = []\n",
        )
    elif case == "pylock-huge-version":
        (repo / "pylock.toml").write_text(
            f'lock-version = "1.0"\n[[packages]]\nname = "alpha"\nversion = "{huge}"\n'
            f'wheels = [{{name = "a.whl", hashes = {{sha256 = "{"a" * 64}"}}}}]\n'
        )
    elif case == "requires-python-huge":
        _pyproject(repo, f'[project]\nname = "me"\nversion = "0"\nrequires-python = ">={huge}"\n')
    else:
        _pyproject(repo, '[project]\nname = "me"\nversion = "0"\nrequires-python = ">=3.8\\nbad"\n')
    try:  # a chain of self-extras is valid input (it names nothing to install)
        prepare_environment(repo, DepsOptions(index_url=index.url))
    except DependencyError as error:
        message = str(error)
        assert error.kind == "declaration", message  # noqa: PT017 - a crash is the failure
        assert "\n" not in message
        assert len(message) <= 500
    else:
        assert case == "self-extra-chain", "a hostile declaration was accepted"


def test_r4_a_uv_lock_marker_on_groups_or_extras_is_not_a_traceback(
    index: FakeIndex, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _pyproject(repo, '[project]\nname = "calc"\nversion = "0"\ndependencies = ["alpha"]\n')
    (repo / "uv.lock").write_text(
        'version = 1\nrequires-python = ">=3.11"\n\n'
        '[[package]]\nname = "alpha"\nversion = "1.0"\nsource = { registry = "x" }\n'
        f'wheels = [{{ url = "x", hash = "sha256:{"a" * 64}" }}]\n\n'
        '[[package]]\nname = "calc"\nversion = "0"\nsource = { virtual = "." }\n'
        'dependencies = [{ name = "alpha", marker = "\'test\' in dependency_groups" }]\n'
    )
    try:
        prepare_environment(repo, DepsOptions(index_url=index.url))
    except DependencyError as error:
        assert "\n" not in str(error)  # noqa: PT017 - either outcome is fine, a crash is not


# --------------------------------------------------- R5: a failure leaves no resolution


def test_r5_a_failed_environment_leaves_no_resolution(index: FakeIndex, tmp_path: Path) -> None:
    repo = _repo(tmp_path, f"alpha==1.0 --hash=sha256:{'0' * 64}\n")
    with pytest.raises(DependencyError):
        prepare_environment(repo, DepsOptions(index_url=index.url))
    resolutions = tmp_path / "deps-home" / "resolutions"
    assert not resolutions.exists() or os.listdir(resolutions) == []
    (repo / "requirements.txt").write_text("pycbomb==1.0\n")
    with pytest.raises(DependencyError):
        prepare_environment(repo, DepsOptions(index_url=index.url, max_bytes=10 * MiB))
    assert not resolutions.exists() or os.listdir(resolutions) == []
