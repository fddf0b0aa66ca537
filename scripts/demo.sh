#!/usr/bin/env bash
# The paginator demonstration, end to end: tests fail, the fix is applied, tests pass.
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/sandbox-agent run --fixture paginator --task "Fix the pagination bug: page 1 must start at the first item." "$@"
