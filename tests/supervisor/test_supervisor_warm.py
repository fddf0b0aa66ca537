"""PID 1 imports what the trusted runner imports first while the host decides its go
(``launch.warm_runner``): only for the in-process runner, only after a passing
attestation, and exactly the modules a fresh runner would import before any repository
code, so the forked child starts where a fresh runner would be after its first lines.

Fresh ``-I -B`` interpreters on the host (Debian's python3, as PID 1 in the image);
the Docker tests run the same code inside containers on both runtimes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox_supervisor import launch

SRC = Path(__file__).parents[2] / "src"
HELPERS = Path(__file__).parent
PYTHON = "/usr/bin/python3"
MiB = 1024 * 1024

pytestmark = pytest.mark.skipif(not Path(PYTHON).exists(), reason="needs Debian's python3")


def _modules_after(code: str) -> set[str]:
    """The modules a fresh ``-I -B`` interpreter holds after ``code`` (this venv's, which
    has pytest; the set of a module's imports does not depend on the interpreter's path)."""
    done = subprocess.run(
        [sys.executable, "-I", "-B", "-c", f"import sys; sys.path.insert(0, {str(SRC)!r}); {code}; "
         "import json as _j; print(_j.dumps(sorted(sys.modules)))"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


@pytest.mark.parametrize("runner", ["unittest", "pytest"])
def test_pid1_warms_every_module_the_runner_imports_before_the_repository(runner: str) -> None:
    if runner == "pytest":
        pytest.importorskip("pytest")
    # What a fresh runner has imported when it puts the repository on sys.path.
    fresh = _modules_after(
        "import sandbox_supervisor.run_tests" + ("; import pytest" if runner == "pytest" else "")
    )
    warmed = _modules_after(
        "import sandbox_supervisor.__main__; from sandbox_supervisor import launch; "
        f"launch.warm_runner([*launch.RUNNER_ARGV, {runner!r}])"
    )
    missing = fresh - warmed - {"sandbox_supervisor.run_tests"}
    assert not missing, sorted(missing)
    # The runner module itself stays unimported: runpy runs it as __main__ in the child.
    assert "sandbox_supervisor.run_tests" not in warmed


def test_pid1_warms_nothing_a_fresh_runner_would_not_import() -> None:
    """The other half of "exactly": beyond PID 1's own modules, the warm adds only what
    the runner (with pytest, the largest set) imports before the repository."""
    pid1 = _modules_after("import sandbox_supervisor.__main__")
    fresh = _modules_after("import sandbox_supervisor.run_tests; import pytest")
    warmed = _modules_after(
        "import sandbox_supervisor.__main__; from sandbox_supervisor import launch; "
        "launch.warm_runner([*launch.RUNNER_ARGV, 'pytest'])"
    )
    extra = warmed - pid1 - fresh
    assert not extra, sorted(extra)


POISON = 'import os; os.write(2, b"POISON " + __name__.encode() + b"\\n")\n'


@pytest.mark.parametrize("runner", ["unittest", "pytest"])
def test_the_warm_ignores_a_hostile_workspace_and_environment(tmp_path: Path, runner: str) -> None:
    """The real imports, with PID 1's cwd (the workspace) full of look-alike modules, a
    ``.pth`` file, pytest configuration and pytest's variables: none of it is loaded."""
    if runner == "pytest":
        pytest.importorskip("pytest")
    names = ("json", "stat", "typing", "pytest", "pluggy", "iniconfig", "packaging", "logging")
    for name in (*names, "inspect", "sitecustomize", "usercustomize", "conftest"):
        (tmp_path / f"{name}.py").write_text(POISON)
    for package in ("unittest", "_pytest", "sandbox_supervisor"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text(POISON)
    (tmp_path / "evil.pth").write_text("import os; os.write(2, b'POISON pth\\n')\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = -p conftest\n")
    code = (
        f"import os, sys; sys.path.append({str(SRC)!r}); "
        "from sandbox_supervisor import launch; "
        f"launch.warm_runner([*launch.RUNNER_ARGV, {runner!r}]); "
        "assert all(not (getattr(m, '__file__', None) or '').startswith(os.getcwd()) "
        "for m in list(sys.modules.values())); "
        "print('pytest' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-B", "-c", code], cwd=tmp_path, capture_output=True, text=True,
        timeout=60, check=False,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8",
             "PYTEST_ADDOPTS": "-p conftest", "PYTEST_PLUGINS": "conftest"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "POISON" not in done.stderr
    assert done.stdout.strip() == str(runner == "pytest")


def test_a_module_that_fails_to_import_is_left_to_the_runner() -> None:
    modules = _modules_after(
        "from sandbox_supervisor import launch; "
        "launch.RUNNER_IMPORTS = ('no_such_module_here', 'unittest'); "
        "launch.warm_runner(list(launch.RUNNER_ARGV) + ['unittest'])"
    )
    assert "unittest" in modules


PID1 = f"""
import json, os, sys, tempfile
sys.path[:0] = [{str(SRC)!r}, {str(HELPERS)!r}]
from sandbox_supervisor import launch, protocol
from sandbox_supervisor.__main__ import supervise
from sandbox_supervisor.attest import Check
from supervisor_helpers import valid_config

calls = []
out = tempfile.TemporaryFile()
def recorder(argv):
    # What PID 1 had written when it warmed: the attestation must come first.
    calls.append({{"argv": argv, "written": os.fstat(out.fileno()).st_size}})
launch.warm_runner = recorder

argv, ok, memory = (json.loads(arg) for arg in sys.argv[1:4])
start_env = {{k: v for k, v in os.environ.items() if k.startswith(launch.START_ENV_PREFIXES)}}
config = valid_config(argv=argv, cwd=tempfile.gettempdir(),
                      workload_env={{"PATH": "/usr/bin:/bin", **start_env}})
config["expect"]["memory_bytes"] = memory
attester = lambda config: [Check("host_test", ok, "")]
read_end, write_end = os.pipe()
os.close(write_end)  # no go: PID 1 must run nothing
code = supervise(json.dumps(config), out.fileno(), attester=attester,
                 read_oom=lambda: None, go_fd=read_end)
print(json.dumps({{"code": code, "calls": calls}}))
"""


def _pid1(argv: list[str], attested: bool, memory: int = 512 * MiB) -> dict[str, object]:
    done = subprocess.run(
        [PYTHON, "-I", "-B", "-c", PID1, json.dumps(argv), json.dumps(attested), str(memory)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return result


def test_pid1_warms_the_runner_after_a_passing_attestation_and_before_the_go() -> None:
    argv = [*launch.RUNNER_ARGV, "unittest"]
    run = _pid1(argv, attested=True)
    (call,) = run["calls"]  # type: ignore[misc]
    assert call["argv"] == argv
    assert call["written"] > 0  # the attestation frame was already out


@pytest.mark.parametrize(
    ("argv", "attested", "memory"),
    [
        ([*launch.RUNNER_ARGV, "unittest"], False, 512 * MiB),  # a failed attestation
        (["/usr/bin/env", "true"], True, 512 * MiB),  # an exec'd workload gains nothing
        (["/usr/bin/python3", "-m", launch.RUNNER_MODULE, "unittest"], True, 512 * MiB),
        # no room for two copies of the imports: the child imports them, as before
        ([*launch.RUNNER_ARGV, "pytest"], True, launch.WARM_MIN_MEMORY_BYTES - 1),
    ],
)
def test_pid1_warms_nothing_for_anything_else(argv: list[str], attested: bool, memory: int) -> None:
    assert _pid1(argv, attested, memory)["calls"] == []
