"""Making environments against a loopback index: made once, found after, whole or not at
all; every bad input one line before anything is made (no Docker needed)."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from deps_wheels import FakeIndex, make_sdist, make_wheel, serve_index

from sandbox_agent.deps import DepsOptions, prepare_environment
from sandbox_agent.deps.manifest import MANIFEST, SITE, Manifest, problems
from sandbox_agent.deps.store import envs_dir
from sandbox_agent.deps.uvcmd import uv_binary
from sandbox_agent.errors import DependencyError

MiB = 1024 * 1024


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeIndex]:
    files = tmp_path_factory.mktemp("index")
    make_wheel(files, "alpha", "1.0", {"alpha/__init__.py": "X = 1\n"}, requires=("beta<2",))
    make_wheel(files, "beta", "1.0", {"beta/__init__.py": "", "beta/run.py": "#!x\n"})
    make_wheel(files, "gamma", "1.0", {"gamma/__init__.py": ""}, requires=("beta>=2",))
    make_wheel(files, "big", "1.0", {"big/__init__.py": "", "big/blob.bin": os.urandom(3 * MiB)})
    make_wheel(
        files,
        "withscript",
        "1.0",
        {"withscript/__init__.py": "", "withscript-1.0.data/scripts/tool": "#!python\n"},
    )
    make_wheel(files, "pytest", "99.0", {"pytest/__init__.py": "HOSTILE = True\n"})
    make_sdist(files, "onlysdist", "1.0")
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


def _options(index: FakeIndex, **kwargs: object) -> DepsOptions:
    return DepsOptions(index_url=index.url, **kwargs)  # type: ignore[arg-type]


def test_made_once_then_found_without_uv_or_the_index(index: FakeIndex, tmp_path: Path) -> None:
    repo = _repo(tmp_path, "alpha\n")
    first = prepare_environment(repo, _options(index))
    assert first is not None
    assert (first.made, first.resolved) == (True, True)
    assert [(p.name, p.version) for p in first.packages] == [("alpha", "1.0"), ("beta", "1.0")]
    asked = len(index.requests)
    second = prepare_environment(repo, _options(index))
    assert second is not None
    assert (second.made, second.resolved) == (False, False)
    assert len(index.requests) == asked
    assert (second.hash, second.manifest_sha256, second.path) == (
        first.hash,
        first.manifest_sha256,
        first.path,
    )
    assert first.summary() == {
        "hash": first.hash,
        "packages": [{"name": "alpha", "version": "1.0"}, {"name": "beta", "version": "1.0"}],
    }


def test_the_environment_is_read_only_hashed_and_holds_wheels_only(
    index: FakeIndex, tmp_path: Path
) -> None:
    environment = prepare_environment(_repo(tmp_path, "alpha\nwithscript\n"), _options(index))
    assert environment is not None
    root = environment.path
    assert sorted(os.listdir(root)) == [MANIFEST, SITE]
    assert environment.path.name == environment.hash
    manifest_bytes = (root / MANIFEST).read_bytes()
    assert hashlib.sha256(manifest_bytes).hexdigest() == environment.manifest_sha256
    manifest = Manifest.model_validate_json(manifest_bytes)
    assert problems(root, manifest, contents=True) == []
    for folder, _dirs, files in os.walk(root):
        assert not os.stat(folder).st_mode & 0o222
        for name in files:
            assert not os.stat(Path(folder) / name).st_mode & 0o222
    site = root / SITE
    assert not (site / "bin").exists()  # console scripts name the host's interpreter
    assert (site / "alpha" / "__init__.py").read_text() == "X = 1\n"
    assert manifest.target.platform.endswith("manylinux_2_36")


def test_the_runners_own_pytest_is_never_installed(index: FakeIndex, tmp_path: Path) -> None:
    environment = prepare_environment(_repo(tmp_path, "pytest\nalpha\n"), _options(index))
    assert environment is not None
    assert "pytest" not in [p.name for p in environment.packages]
    assert not (environment.path / SITE / "pytest").exists()
    assert prepare_environment(_repo(tmp_path, "pytest==99.0\n"), _options(index)) is None


@pytest.mark.parametrize(
    ("requirements", "kind", "says"),
    [
        ("onlysdist\n", "no_wheel", "onlysdist: no wheel"),
        ("alpha\ngamma\n", "conflict", "conflict"),
        ("nosuchpackage\n", "not_found", "nosuchpackage is not on the index"),
        ("beta==7\n", "not_found", "no version beta==7"),
        (f"beta==1.0 --hash=sha256:{'0' * 64}\n", "hash", "matches none of its --hash values"),
    ],
)
def test_bad_input_is_one_line_and_leaves_nothing(
    index: FakeIndex, tmp_path: Path, requirements: str, kind: str, says: str
) -> None:
    with pytest.raises(DependencyError) as raised:
        prepare_environment(_repo(tmp_path, requirements), _options(index))
    assert raised.value.kind == kind
    assert says in str(raised.value)
    assert "\n" not in str(raised.value)
    assert not envs_dir().exists() or os.listdir(envs_dir()) == []


def test_a_hashed_requirement_narrows_its_files(index: FakeIndex, tmp_path: Path) -> None:
    wheel = next((index.folder).glob("beta-1.0-*.whl"))
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    environment = prepare_environment(
        _repo(tmp_path, f"beta==1.0 --hash=sha256:{digest}\n"), _options(index)
    )
    assert environment is not None
    assert [p.name for p in environment.packages] == ["beta"]


def test_over_the_size_limit_is_refused_and_nothing_half_built_stays(
    index: FakeIndex, tmp_path: Path
) -> None:
    repo = _repo(tmp_path, "big\n")
    with pytest.raises(DependencyError) as raised:
        prepare_environment(repo, _options(index, max_bytes=2 * MiB))
    assert raised.value.kind == "too_large"
    assert "--deps-max-bytes" in str(raised.value)
    assert os.listdir(envs_dir()) == []  # neither the environment nor a partial one
    assert prepare_environment(repo, _options(index, max_bytes=8 * MiB)) is not None


def test_an_index_that_cannot_be_reached(tmp_path: Path) -> None:
    with pytest.raises(DependencyError) as raised:
        prepare_environment(
            _repo(tmp_path, "alpha\n"), DepsOptions(index_url="http://127.0.0.1:9/simple")
        )
    assert raised.value.kind == "index_unreachable"
    assert "cannot reach the package index http://127.0.0.1:9/simple" in str(raised.value)


def test_a_damaged_environment_is_made_again_and_a_dead_partial_removed(
    index: FakeIndex, tmp_path: Path
) -> None:
    repo = _repo(tmp_path, "alpha\n")
    environment = prepare_environment(repo, _options(index))
    assert environment is not None
    victim = environment.path / SITE / "alpha" / "__init__.py"
    os.chmod(victim.parent, 0o700)
    victim.unlink()
    dead = envs_dir() / ".partial-999999999-abcdef00"
    dead.mkdir()
    again = prepare_environment(repo, _options(index))
    assert again is not None
    assert again.made
    assert victim.is_file()
    assert not dead.exists()


def test_a_pylock_pins_and_hashes_win(index: FakeIndex, tmp_path: Path) -> None:
    wheel = next((index.folder).glob("beta-1.0-*.whl"))
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    repo = _repo(tmp_path, "alpha\n")  # ignored: the lock is the environment
    (repo / "pylock.toml").write_text(
        'lock-version = "1.0"\ncreated-by = "test"\n'
        '[[packages]]\nname = "calc"\ndirectory = {path = "."}\n'
        f'[[packages]]\nname = "beta"\nversion = "1.0"\n'
        f'wheels = [{{name = "{wheel.name}", hashes = {{sha256 = "{digest}"}}}}]\n'
    )
    environment = prepare_environment(repo, _options(index))
    assert environment is not None
    assert environment.source == "pylock.toml"
    assert [p.name for p in environment.packages] == ["beta"]
    (repo / "pylock.toml").write_text((repo / "pylock.toml").read_text().replace(digest, "0" * 64))
    with pytest.raises(DependencyError) as raised:
        prepare_environment(repo, _options(index))
    assert raised.value.kind == "hash"


def test_a_uv_lock_is_exported_not_resolved_again(index: FakeIndex, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
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
    environment = prepare_environment(repo, _options(index))
    assert environment is not None
    assert environment.source == "uv.lock"
    assert [p.name for p in environment.packages] == ["alpha", "beta"]


def test_what_the_environment_holds_is_checked_on_every_use(
    index: FakeIndex, tmp_path: Path
) -> None:
    environment = prepare_environment(_repo(tmp_path, "alpha\n"), _options(index))
    assert environment is not None
    manifest = Manifest.model_validate_json((environment.path / MANIFEST).read_bytes())
    extra = environment.path / SITE / "alpha" / "planted.py"
    os.chmod(extra.parent, 0o700)
    extra.write_text("x = 1\n")
    os.chmod(extra.parent, stat.S_IRUSR | stat.S_IXUSR)
    assert problems(environment.path, manifest) == ["alpha/planted.py: not in the manifest"]
