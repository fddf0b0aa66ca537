"""The runner image of this state folder: its record, or the image Docker already holds.

``image.json`` (under ``$SANDBOX_AGENT_HOME``) records which image runs use. Its tag is
the hash of the image's inputs, so a new state folder (a fresh ``SANDBOX_AGENT_HOME``, a
second checkout) on a daemon that already holds ``sandbox-agent-runner:<that hash>`` has
the very image it would build: ``runner_record`` records it then (issue 30) instead of
saying "not built" and having ``make image`` build it again for ~45 s.

Adoption trusts the daemon's tag exactly as far as every run already trusts the daemon:
whoever can tag an image there can also replace the image a record names. It writes the
record and nothing else: no image is removed (a build still drops the one it replaces).
Every sandbox is still verified against its spec and attested from inside by PID 1.

This module is kept apart from ``image`` on purpose: ``image.py``'s own bytes are an
input of the tag, so a change there means a new image for everyone.

Run as ``python -m sandbox_agent.hostsetup.runner [ensure|show]``: ``ensure`` adopts,
else builds (what ``make image`` should run); ``show`` prints the record.
"""

from __future__ import annotations

import sys
import time

from sandbox_agent import settings
from sandbox_agent.errors import SetupError
from sandbox_agent.hostsetup import image

BUILD_COMMAND = "make image"
"""The build, from the checkout (about 45 s the first time)."""
MODULE_COMMAND = "python -m sandbox_agent.hostsetup.runner ensure"
"""The same, from any environment the package is installed in."""
LOOKUP_TIMEOUT_S = 10
"""One tag lookup; a daemon that does not answer by then is left for the command's own
check to report."""


def tagged_image_id(tag: str) -> str | None:
    """The ID of the image Docker holds under ``tag``; None when it holds none or no daemon
    answers (the caller's message then says what to do)."""
    import docker
    import docker.errors

    try:
        client = docker.from_env(version=image.DOCKER_API_VERSION, timeout=LOOKUP_TIMEOUT_S)
    except docker.errors.DockerException:
        return None
    try:
        return str(client.images.get(tag).id)
    except docker.errors.DockerException:
        return None
    finally:
        client.close()


def runner_record(*, adopt: bool = True) -> image.ImageRecord:
    """The record of the runner image built from the current inputs.

    Args:
        adopt: when this state folder has no record for these inputs, record the image
            Docker holds under their tag, if any.

    Raises:
        SetupError: no record, and (with ``adopt``) no image with that tag: the message
            names the tag, where the record was looked for, and the command that builds it.
    """
    tag = image.expected_tag()
    record = image.load_record()
    if record is not None and record.tag == tag:
        return record
    if adopt:
        found = tagged_image_id(tag)
        if found is not None:
            return _adopt(tag, found)
    raise SetupError(not_built_message(tag))


def not_built_message(tag: str) -> str:
    """One line: which image is missing, where its record was looked for, what builds it."""
    path = settings.image_record_path()
    return (
        f"the runner image {tag} is not built: no record in {path} (the state folder, "
        f"moved by ${settings.STATE_HOME_ENV}) and no image with that tag in Docker; run "
        f"'{BUILD_COMMAND}' in the checkout (about 45 s), or '{MODULE_COMMAND}'"
    )


def _adopt(tag: str, image_id: str) -> image.ImageRecord:
    record = image.ImageRecord(
        tag=tag, image_id=image_id, inputs_sha256=image.inputs_sha256(), built_at=time.time()
    )
    return image._write_record(record)


def ensure() -> tuple[str, image.ImageRecord]:
    """The runner image: recorded, else adopted, else built now; and which of the three."""
    try:
        before = image.load_record()
        record = runner_record()
    except SetupError:
        return "built", image.ensure()
    if before == record:
        return "recorded", image.ensure()  # checks the recorded image still exists
    return "adopted", record


def main(argv: list[str] | None = None) -> int:
    """``ensure`` (default) or ``show``."""
    args = sys.argv[1:] if argv is None else argv
    action = args[0] if args else "ensure"
    try:
        if action == "ensure" and len(args) <= 1:
            how, record = ensure()
        elif action == "show" and len(args) == 1:
            how, record = "recorded", runner_record(adopt=False)
        else:
            print("usage: python -m sandbox_agent.hostsetup.runner [ensure|show]", file=sys.stderr)
            return 2
    except SetupError as error:
        print(f"image: {error}", file=sys.stderr)
        return 2
    print(f"image: {how} {record.tag} {record.image_id}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
