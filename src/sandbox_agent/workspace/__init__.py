"""The private workspace: a safe copy of the repository, and safe file operations on it."""

from sandbox_agent.workspace.copy import SkippedEntry, WorkspaceLimits
from sandbox_agent.workspace.hashing import tree_sha256
from sandbox_agent.workspace.owner import reap_workspaces
from sandbox_agent.workspace.workspace import Workspace

__all__ = ["SkippedEntry", "Workspace", "WorkspaceLimits", "reap_workspaces", "tree_sha256"]
