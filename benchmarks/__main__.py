"""``python -m benchmarks`` (``make bench``): run every benchmark."""

from __future__ import annotations

import sys

from benchmarks import (
    cluster_bench,
    demo_bench,
    deps_bench,
    eval_bench,
    localmodel_bench,
    parallel_bench,
    repair_bench,
    sandbox_bench,
    spectrum_bench,
)

if __name__ == "__main__":
    code = sandbox_bench.main(sys.argv[1:]) or demo_bench.main([])
    code = code or eval_bench.main([])
    code = code or deps_bench.main([])
    code = code or localmodel_bench.main([])
    code = code or repair_bench.main([])
    code = code or spectrum_bench.main([])
    code = code or parallel_bench.main([])
    sys.exit(code or cluster_bench.main([]))
