"""An old commit checked out beside this one, with other tests laid over it, and its own
runner image.

The old tree keeps its own ``src/`` (the controller and the supervisor), ``fixtures/``,
``evals/`` and everything else; ``tests/`` (whole: the test modules, their ``conftest.py``
files, helpers and data) and ``pyproject.toml`` (the pytest configuration: markers,
warnings as errors, the per-test timeout) come from the fix commit, or from the current
tree. Docker tests there need the old supervisor, so the old tree's own ``image ensure``
builds its image, recorded in a state folder of its own per image tag and reused by
later runs.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from devtools.assurance import gitrepo
from sandbox_agent.errors import SetupError
from sandbox_agent.hostsetup.image import DOCKER_API_VERSION
from sandbox_agent.settings import PROJECT_ROOT, STATE_HOME_ENV, state_home

if TYPE_CHECKING:
    import docker

OVERLAID = ("tests", "pyproject.toml")
"""What an old tree takes from elsewhere: the tests and their pytest configuration."""
HOLD_REPOSITORY = "sandbox-agent-regress-hold"
IMAGE_TIMEOUT_S = 1800.0
SETUP_TIMEOUT_S = 120.0
_IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
# The old image.py prunes every other runner image after a build; on a shared host that
# would delete images other checkouts are using, so the old build keeps them.
_ENSURE_KEEPING_OTHERS = (
    "import sys\n"
    "import sandbox_agent.hostsetup.image as image\n"
    "image._prune_older_images = lambda keep: None\n"
    "sys.exit(image.main(['ensure']))\n"
)


@contextlib.contextmanager
def checkout(commit: str, scratch: Path) -> Iterator[Path]:
    """A temporary worktree of ``commit``, removed afterwards.

    Raises:
        SetupError: git could not add the worktree.
    """
    tree = scratch / f"tree-{commit[:12]}"
    # Trees from before the project carried its own data read it from a "shared/data"
    # folder beside the checkout: give them this project's copy there.
    old_data = scratch / "shared" / "data"
    if not old_data.exists():
        old_data.mkdir(parents=True)
        (old_data / "humanevalfix").symlink_to(
            PROJECT_ROOT / "evals" / "data" / "humanevalfix", target_is_directory=True
        )
    gitrepo.git("worktree", "add", "--detach", "--quiet", str(tree), commit)
    try:
        yield tree
    finally:
        with contextlib.suppress(SetupError):
            gitrepo.git("worktree", "remove", "--force", str(tree))
        shutil.rmtree(tree, ignore_errors=True)
        with contextlib.suppress(SetupError):
            gitrepo.git("worktree", "prune")


def lay_tests(tree: Path, commit: str | None) -> None:
    """Replace ``tree``'s tests and pytest configuration (OVERLAID) with ``commit``'s, or
    with the current tree's when ``commit`` is None.

    Raises:
        SetupError: git could not check the files out.
    """
    for name in OVERLAID:
        target = tree / name
        if target.is_dir():
            shutil.rmtree(target)
        else:
            target.unlink(missing_ok=True)
    if commit is not None:
        gitrepo.git("checkout", commit, "--", *OVERLAID, root=tree)
        return
    for name in OVERLAID:
        source = PROJECT_ROOT / name
        if source.is_dir():
            shutil.copytree(source, tree / name, ignore=_IGNORED)
        else:
            shutil.copy2(source, tree / name)


def old_python(tree: Path, scratch: Path, plugin_dir: Path) -> Path:
    """A Python for ``tree``: a venv that sees ``tree``'s ``src/``, the plugin, and the
    current venv's packages, but not this checkout's ``src/``.

    The current venv adds this checkout's ``src/`` through its editable ``.pth``, which
    also reaches interpreters started with ``-I`` (where ``PYTHONPATH`` is ignored), as
    the tests start the trusted runner; so the old tree gets an interpreter of its own.

    Raises:
        SetupError: the venv could not be made.
    """
    venv = scratch / f"venv-{tree.name}"
    done = subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)],
        capture_output=True,
        text=True,
        timeout=SETUP_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        raise SetupError(f"python -m venv failed: {done.stderr.strip()[-300:]}")
    current = Path(sysconfig.get_paths()["purelib"])
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    site = venv / "lib" / version / "site-packages"
    # .pth files are read in name order: these paths first, so the others' imports work.
    lines = [str(plugin_dir), str(tree / "src"), str(current)]
    (site / "00-sandbox-agent-regression.pth").write_text("\n".join(lines) + "\n")
    own = str(PROJECT_ROOT / "src")
    for pth in current.glob("*.pth"):
        if own not in pth.read_text(encoding="utf-8", errors="replace"):
            shutil.copy2(pth, site / pth.name)
    return venv / "bin" / "python"


def tree_env(home: Path, pythonpath: Path | None = None) -> dict[str, str]:
    """The environment of a test run: its own state folder, Docker tests required (a
    missing daemon fails them, never skips), ``PYTHONPATH`` only the given folder."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"SANDBOX_AGENT_SKIP_LOG", "SANDBOX_AGENT_FIXTURES", "PYTHONPATH"}
    }
    env.update(
        PYTHONDONTWRITEBYTECODE="1",
        SANDBOX_AGENT_REQUIRE_DOCKER="1",
        **{STATE_HOME_ENV: str(home)},
    )
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return env


def _python(python: Path, code: str, tree: Path, env: dict[str, str], timeout: float) -> str:
    try:
        done = subprocess.run(
            [str(python), "-c", code],
            cwd=tree,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as error:
        raise SetupError(f"{tree.name}: set-up took over {timeout:.0f} s") from error
    if done.returncode != 0:
        tail = (done.stdout + done.stderr).strip().splitlines() or ["no output"]
        raise SetupError(f"{tree.name}: {tail[-1]}")
    return done.stdout.strip()


def state_folder(tree: Path, python: Path) -> Path:
    """The old tree's own state folder, one per runner image tag (what its inputs hash to).

    The debootstrap cache is shared with this checkout's, so a new tag costs seconds.
    """
    code = "from sandbox_agent.hostsetup.image import expected_tag; print(expected_tag())"
    tag = _python(python, code, tree, tree_env(state_home()), SETUP_TIMEOUT_S).splitlines()[-1]
    home = state_home() / "regression" / tag.rpartition(":")[2]
    home.mkdir(parents=True, exist_ok=True)
    shared = state_home() / "rootfs-cache"
    shared.mkdir(parents=True, exist_ok=True)
    link = home / "rootfs-cache"
    if not link.exists():
        link.symlink_to(shared, target_is_directory=True)
    return home


def old_image(tree: Path, python: Path, env: dict[str, str]) -> str:
    """Build (or find) the old tree's runner image with its own recipe; its image ID.

    Raises:
        SetupError: the old tree's build failed.
    """
    line = _python(python, _ENSURE_KEEPING_OTHERS, tree, env, IMAGE_TIMEOUT_S).splitlines()[-1]
    return line.split()[-1]


def _client() -> docker.DockerClient:
    import docker

    return docker.from_env(version=DOCKER_API_VERSION, timeout=60)


class ImageHolds:
    """Tags the images a run needs in a second repository while it runs.

    Any checkout's ``make image`` removes every runner image but its own; Docker refuses
    to remove, unforced, an image tagged in two repositories. The tags are removed at the
    end; the images stay for the next run until someone's build prunes them.
    """

    def __init__(self) -> None:
        self._tags: list[str] = []

    def keep(self, image_id: str) -> None:
        """Hold ``image_id`` until the end of the run.

        Raises:
            SetupError: the daemon refused the tag.
        """
        client = _client()
        tag = f"{image_id.removeprefix('sha256:')[:12]}-{os.getpid()}"
        try:
            client.api.tag(image_id, HOLD_REPOSITORY, tag)
        except Exception as error:  # the SDK raises several unrelated types here
            why = getattr(error, "explanation", None) or error
            raise SetupError(f"could not hold the runner image {image_id[:19]}: {why}") from error
        finally:
            client.close()
        self._tags.append(f"{HOLD_REPOSITORY}:{tag}")

    def __enter__(self) -> ImageHolds:
        return self

    def __exit__(self, *exc: object) -> None:
        if not self._tags:
            return
        client = _client()
        try:
            for tag in self._tags:
                with contextlib.suppress(Exception):
                    client.api.remove_image(tag)
        finally:
            client.close()
