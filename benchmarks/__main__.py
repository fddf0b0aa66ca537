"""``python -m benchmarks`` (``make bench``): run every benchmark."""

from __future__ import annotations

import sys

from benchmarks import sandbox_bench

if __name__ == "__main__":
    sys.exit(sandbox_bench.main(sys.argv[1:]))
