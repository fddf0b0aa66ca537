"""Compiles an environment's modules one by one, within limits (SR-12 retest R1-R3).

Run by ``deps.build`` as ``python -I THIS_FILE SITE PREFIX BUDGET MEMORY``; stdlib only,
and it imports nothing of the project. Compiling parses and folds constants, it runs
nothing of the package; but a tiny source can fold into a huge ``.pyc`` or take
gigabytes to compile, so:

- the bytes written count: past ``BUDGET`` it stops and exits ``EXIT_OVER_BUDGET``;
- ``RLIMIT_FSIZE`` caps any one file at the budget (``SIGXFSZ`` ignored: the write fails
  instead, and that module stays source), ``RLIMIT_AS`` caps the memory at ``MEMORY``;
- a module that does not compile, or runs out of memory, stays source;
- the caller's time limit (the phase's) kills it.

Tracebacks name ``PREFIX`` (``/deps/site``), where the sandbox mounts the environment.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import py_compile
import resource
import signal
import sys

EXIT_OVER_BUDGET = 3


def _limit(budget: int, memory: int) -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (budget + 1, budget + 1))
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def main(argv: list[str]) -> int:
    site, prefix, budget, memory = argv[1], argv[2], int(argv[3]), int(argv[4])
    _limit(budget, memory)
    written = 0
    for folder, dirs, files in os.walk(site):
        dirs.sort()
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            source = os.path.join(folder, name)
            target = importlib.util.cache_from_source(source)
            try:
                py_compile.compile(
                    source, cfile=target, dfile=prefix + source[len(site) :], doraise=True
                )
            except (py_compile.PyCompileError, MemoryError, RecursionError, ValueError, OSError):
                with contextlib.suppress(OSError):
                    os.unlink(target)
                continue
            written += os.path.getsize(target)
            if written > budget:
                print(written)
                return EXIT_OVER_BUDGET
    print(written)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
