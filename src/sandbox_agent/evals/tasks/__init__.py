"""What an evaluation runs: the task file's schema (``taskfile``), the suites built from it
and from HumanEvalFix (``suites``, ``humanevalfix``), one runnable case (``cases``), and
the smallest-edit helper of generated plans (``edits``). The ``realrepos`` suite, made
from real projects, is its own package beside this one."""
