"""uv's real error text (captured from uv 0.13.9 against a loopback index) -> one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox_agent.deps.failures import classify

DATA = Path(__file__).parent / "data" / "uv"
INDEX = "http://127.0.0.1:9/simple"
PLATFORM = "x86_64-manylinux_2_36"


@pytest.mark.parametrize(
    ("capture", "kind", "says"),
    [
        ("compile_no_wheel.txt", "no_wheel", "onlysdist: no wheel, only an sdist"),
        ("install_no_wheel.txt", "no_wheel", "onlysdist: no wheel"),
        ("compile_no_platform_wheel.txt", "no_wheel", "native: no wheel with a matching platform"),
        ("compile_conflict.txt", "conflict", "gamma depend on beta>=2"),
        ("compile_not_found.txt", "not_found", "nosuchpkg is not on the index"),
        ("compile_no_version.txt", "not_found", "no version beta==9"),
        ("compile_unreachable.txt", "index_unreachable", "Connection refused"),
        ("compile_unknown_host.txt", "index_unreachable", "Name or service not known"),
        ("install_hash_mismatch.txt", "hash", "beta==1.0: the downloaded file matches none"),
    ],
)
def test_each_failure_is_one_line_naming_its_cause(capture: str, kind: str, says: str) -> None:
    error = classify((DATA / capture).read_text(), index_url=INDEX, platform=PLATFORM)
    assert error.kind == kind
    assert says in str(error)
    assert "\n" not in str(error)
    assert len(str(error)) <= 400


def test_no_wheel_says_what_building_the_sdist_would_take() -> None:
    text = (DATA / "compile_no_wheel.txt").read_text()
    message = str(classify(text, index_url=INDEX, platform=PLATFORM))
    assert "--allow-sdist" in message
    assert "run the package's own code" in message


def test_anything_else_is_a_tool_failure_with_uvs_first_error_line() -> None:
    error = classify(
        "noise\nerror: something new\n  cause: x\n", index_url=INDEX, platform=PLATFORM
    )
    assert error.kind == "tool"
    assert str(error) == "uv failed: something new"
