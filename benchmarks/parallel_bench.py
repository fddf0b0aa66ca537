"""N sampled candidates: N requests one after another, or N at once on llama-server's slots.

The repair strategy samples up to N candidates for a failing task, one request after
another on the project's one-slot server. Issue 29 asked whether ``llama-server
--parallel N`` makes N candidates cheaper than N requests: on a CPU, generation reads
every weight once per step, so N sequences decoded in one batch could cost little more
than one. Measured here side by side, on one server started for the purpose with N
slots (``--parallel N``, each slot the context of the project's one), on rows of the
development split (even-numbered HumanEvalFix rows): for each row, the one-shot prompt
at the repair strategy's temperature and seeds, first N requests one after another,
then the same N requests at once; the two modes alternate row by row, so a machine
whose load changes weighs on both. Printed: each row's wall time in both modes, the
tokens generated, and the median ratio of generated tokens per second, at once against
one after another (above 1: at once is cheaper per candidate).
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROWS = tuple(f"humanevalfix-python-{n}" for n in (10, 20, 30))
"""Even-numbered rows: the development split, never the reported one."""
START_TIMEOUT_S = 180.0
REQUEST_TIMEOUT_S = 600.0
API_KEY = "parallel-bench"
"""The server started here listens on loopback for the time of the bench only."""


def _server_argv(port: int, key_file: Path, log: Path, slots: int) -> list[str] | None:
    """The project's server command line (``localmodel.server``) with ``slots`` slots,
    each the context of the project's one; None when ``make model`` has not built it."""
    from sandbox_agent.localmodel import paths, server
    from sandbox_agent.localmodel.build import build_options, find_build

    found = find_build(paths.builds_dir(), build_options())
    if found is None or not paths.model_path().exists():
        return None
    binary, build = found
    record = server.ServerRecord(
        pid=0,
        port=port,
        binary=str(binary),
        model_path=str(paths.model_path()),
        api_key_file=str(key_file),
        log_file=str(log),
        context_tokens=server.DEFAULT_CONTEXT_TOKENS * slots,
        threads=os.cpu_count() or 1,
        server_version=build.server_version,
        started_at="",
    )
    argv = server.server_argv(record)
    argv[argv.index("--parallel") + 1] = str(slots)
    return argv


def _timed(sample: Callable[[int], int], seeds: list[int], at_once: bool) -> tuple[float, int]:
    """Wall seconds and tokens generated for one sample per seed, all at once or in turn."""
    began = time.monotonic()
    if at_once:
        with ThreadPoolExecutor(max_workers=len(seeds)) as pool:
            tokens = sum(pool.map(sample, seeds))
    else:
        tokens = sum(sample(seed) for seed in seeds)
    return time.monotonic() - began, tokens


def _compare(root: str, slots: int) -> None:
    """The table: each row's N samples one after another and at once, alternating."""
    import openai

    from sandbox_agent.controller.models import RepairOptions
    from sandbox_agent.evals.running.oneshot import MAX_OUTPUT_TOKENS, SYSTEM_PROMPT, prompt
    from sandbox_agent.evals.tasks import humanevalfix
    from sandbox_agent.localmodel import pins

    options = RepairOptions()
    rows = {humanevalfix.task_id(r): r for r in humanevalfix.load_rows(humanevalfix.dataset_path())}
    client = openai.OpenAI(
        api_key=API_KEY, base_url=f"{root}/v1", max_retries=0, timeout=REQUEST_TIMEOUT_S
    )

    def sampler(user: str) -> Callable[[int], int]:
        def sample(seed: int) -> int:
            response = client.chat.completions.create(
                model=pins.MODEL_NAME,
                messages=[
                    {"role": "system", "content": SYSTEM_PROMPT},
                    {"role": "user", "content": user},
                ],
                temperature=options.temperature,
                seed=seed,
                max_tokens=MAX_OUTPUT_TOKENS,
            )
            return response.usage.completion_tokens if response.usage else 0

        return sample

    seeds = [options.seed + k for k in range(1, slots + 1)]
    print(f"\n{slots} candidates per row, temperature {options.temperature}, one server "
          f"with --parallel {slots}, rows of the development split")  # fmt: skip
    print("| row | one after another s | tokens | at once s | tokens | tokens/s ratio |")
    print("|---|---|---|---|---|---|")
    sampler(prompt(rows[ROWS[0]]))(seeds[0])  # warm: weights paged in, caches made
    ratios = []
    for number, task_id in enumerate(ROWS):
        sample = sampler(prompt(rows[task_id]))
        order = (False, True) if number % 2 == 0 else (True, False)
        timed = {at_once: _timed(sample, seeds, at_once) for at_once in order}
        (serial_s, serial_n), (batch_s, batch_n) = timed[False], timed[True]
        # tokens per second, not wall times: the samples differ between the two modes
        # (a batch is not bit-identical), and so do their lengths
        ratio = (batch_n / batch_s) / (serial_n / serial_s) if serial_n and batch_s else 0.0
        ratios.append(ratio)
        print(f"| {task_id} | {serial_s:.1f} | {serial_n} | {batch_s:.1f} | {batch_n} "
              f"| {ratio:.2f} |")  # fmt: skip
    print(f"median ratio of generated tokens per second, at once / one after another: "
          f"{statistics.median(ratios):.2f}")  # fmt: skip


def main(argv: list[str]) -> int:
    from sandbox_agent import ports
    from sandbox_agent.controller.models import RepairOptions
    from sandbox_agent.localmodel import process

    slots = RepairOptions().candidates
    with tempfile.TemporaryDirectory(prefix="parallel-bench-") as scratch:
        key_file, log = Path(scratch) / "api-key", Path(scratch) / "server.log"
        key_file.write_text(API_KEY + "\n")
        key_file.chmod(0o600)
        port = ports.free_port(process.LOOPBACK)
        command = _server_argv(port, key_file, log, slots)
        if command is None:
            print("parallel bench: no llama-server build or model here: run 'make model'")
            return 1
        pid = process.spawn_detached(command, log)
        try:
            root = f"http://{process.LOOPBACK}:{port}"
            deadline = time.monotonic() + START_TIMEOUT_S
            outcome = process.wait_healthy(root, lambda: process.started(pid, log), deadline)
            if outcome != "ok":
                print(f"parallel bench: the {slots}-slot server did not start ({outcome}); "
                      f"see {log}")  # fmt: skip
                return 1
            _compare(root, slots)
        finally:
            process.stop_group(pid)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
