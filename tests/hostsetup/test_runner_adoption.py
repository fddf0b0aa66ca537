"""A new state folder adopts the runner image Docker already holds under the inputs'
tag, instead of saying "not built" (issue 30, item 5); with no such image the message
says where it looked and which command builds it."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox_agent.errors import SetupError
from sandbox_agent.hostsetup import image, runner

IMAGE_ID = "sha256:" + "ab" * 32


@pytest.fixture
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SANDBOX_AGENT_HOME", str(tmp_path / "state"))
    return tmp_path / "state"


def test_a_tag_docker_holds_is_recorded_under_a_new_home(
    state_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []

    def tagged(tag: str) -> str | None:
        asked.append(tag)
        return IMAGE_ID

    monkeypatch.setattr(runner, "tagged_image_id", tagged)
    record = runner.runner_record()
    assert asked == [image.expected_tag()]
    assert (record.tag, record.image_id) == (image.expected_tag(), IMAGE_ID)
    assert image.load_record() == record, "adopted once, recorded for the next command"
    assert image.current_record() == record


def test_a_matching_record_is_used_without_asking_docker(
    state_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "tagged_image_id", lambda tag: IMAGE_ID)
    first = runner.runner_record()

    def never(tag: str) -> str | None:
        raise AssertionError("Docker asked although the record matches")

    monkeypatch.setattr(runner, "tagged_image_id", never)
    assert runner.runner_record() == first


def test_no_image_names_where_it_looked_and_the_command(
    state_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "tagged_image_id", lambda tag: None)
    with pytest.raises(SetupError) as refused:
        runner.runner_record()
    message = str(refused.value)
    assert "\n" not in message
    assert f"the runner image {image.expected_tag()} is not built" in message
    assert str(state_home / "image.json") in message
    assert "SANDBOX_AGENT_HOME" in message
    assert "make image" in message
    assert image.load_record() is None


def test_a_stale_record_is_replaced_by_the_tagged_image(
    state_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state_home.mkdir(parents=True)
    stale = image.ImageRecord(
        tag=f"{image.IMAGE_REPOSITORY}:0000000000000000",
        image_id="sha256:" + "0" * 64,
        inputs_sha256="0" * 64,
        built_at=0.0,
    )
    (state_home / "image.json").write_text(stale.model_dump_json())
    removed: list[object] = []
    monkeypatch.setattr(image, "_prune_previous_image", lambda *a, **k: removed.append(a))
    monkeypatch.setattr(runner, "tagged_image_id", lambda tag: IMAGE_ID)
    assert runner.runner_record().image_id == IMAGE_ID
    assert removed == [], "adoption removes no image (another checkout may use it)"


def test_adoption_can_be_turned_off(state_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "tagged_image_id", lambda tag: IMAGE_ID)
    with pytest.raises(SetupError, match="make image"):
        runner.runner_record(adopt=False)


def test_the_ensure_command_adopts_before_it_builds(
    state_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(runner, "tagged_image_id", lambda tag: IMAGE_ID)

    def build() -> image.ImageRecord:
        raise AssertionError("built although Docker holds the tag")

    monkeypatch.setattr(image, "build", build)
    assert runner.main(["ensure"]) == 0
    out = capsys.readouterr().out
    assert f"adopted {image.expected_tag()} {IMAGE_ID}" in out


@pytest.mark.docker
def test_a_fresh_home_adopts_the_image_this_host_built(
    state_home: Path,
) -> None:
    # The suite's Docker tests run on an image recorded in the usual state folder; a
    # fresh one finds that very image by its tag.
    record = runner.runner_record()
    assert record.tag == image.expected_tag()
    assert (state_home / "image.json").is_file()


def test_commands_that_start_sandboxes_adopt_first(
    state_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from sandbox_agent.cli import main

    monkeypatch.setattr(runner, "tagged_image_id", lambda tag: IMAGE_ID)
    assert main(["fixtures", "--json"]) == 0
    assert image.load_record() is None, "a command without sandboxes asks Docker nothing"
    assert main(["run", "--fixture", "no-such-fixture", "--task", "t"]) == 2
    assert "no fixture 'no-such-fixture'" in capsys.readouterr().err
    record = image.load_record()
    assert record is not None
    assert record.image_id == IMAGE_ID


def test_nothing_to_adopt_leaves_the_commands_own_message(
    state_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from sandbox_agent.cli import main

    monkeypatch.setattr(runner, "tagged_image_id", lambda tag: None)
    assert main(["run", "--fixture", "no-such-fixture", "--task", "t"]) == 2
    assert "no fixture 'no-such-fixture'" in capsys.readouterr().err
    assert image.load_record() is None
