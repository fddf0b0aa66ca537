"""``python -m sandbox_agent`` is the ``sandbox-agent`` command."""

import sys

from sandbox_agent.cli import console

sys.exit(console())
