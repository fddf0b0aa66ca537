# sandbox-agent: one command each for the demo and the tests; each does its own set-up.
SHELL := /bin/bash
.DEFAULT_GOAL := help

UV ?= $(shell command -v uv 2>/dev/null || echo $(HOME)/.local/bin/uv)
PY := .venv/bin/python
RUNS ?= 100
RUNTIME ?= runc
STRESS_ARGS ?=
PYTEST_ARGS ?=
LOAD ?= 2
ORDER ?= declared
SEED ?=
# make test-soak RUNS=N: RUNS defaults to 5 there (100 is stress's default).
SOAK_RUNS := $(if $(filter command line environment,$(origin RUNS)),$(RUNS),5)

export DOCKER_API_VERSION := 1.41

.PHONY: help setup venv docker image image-online demo test test-soak check fmt bench stress browser \
        adversarial-report regression-evidence live-smoke clean model eval-local eval-dev localise-recall viewer-screenshots \
        cluster-up cluster-down

help:
	@echo "make demo    run the paginator demonstration end to end (sets everything up)"
	@echo "make test    the whole suite, Docker tests included (sets everything up)"
	@echo "make check   ruff, ruff format --check, mypy --strict"
	@echo "make test-soak RUNS=5 LOAD=2 [ORDER=random] [SEED=N]   the suite again and again under load"
	@echo "make image   build the runner image locally (debootstrap + docker import)"
	@echo "make bench   benchmarks: ratios measured side by side"
	@echo "make stress  sandbox lifecycle stress (RUNS=N)"
	@echo "make model   build llama-server and fetch the local model (then: --provider local)"
	@echo "make eval-local [HEF=odd|all|N] [STAGES=...] [PART=K/N]   the real-model evaluation (hours; resumes)"
	@echo "make eval-dev VARIANT=\"--redraws 2\" [ROWS=30] [REPOS=8] [STAGES=...]   a change against the same code without it, on the development split (hours; resumes)"
	@echo "make localise-recall [TASKS=\"file ...\"] [EXCLUDE=file]   the repair strategy's localisation against realrepos' ground truth, no model"
	@echo "make cluster-up / cluster-down   a local Ray cluster (head + 2 workers on loopback) for --ray auto"
	@echo "make viewer-screenshots   the run viewer's browser tests, then their screenshots into docs/viewer/"

# uv itself: PyPI is reachable, so a missing uv is installed from there.
$(UV):
	python3 -m pip install --quiet --user uv || python3 -m pip install --quiet uv

# Bytecode is compiled ahead: with PYTHONDONTWRITEBYTECODE set (as on our machines)
# nothing would cache it, and every CLI start would compile ~400 modules (~0.3 s).
venv: .venv/.synced
	@$(PY) -m compileall -q -j 0 src >/dev/null
.venv/.synced: pyproject.toml uv.lock | $(UV)
	$(UV) sync --frozen --quiet --compile-bytecode
	@touch $@

docker:
	@bash scripts/ensure-docker.sh

image: venv docker
	@$(PY) -m sandbox_agent.hostsetup.image ensure

image-online: venv docker
	DOCKER_BUILDKIT=0 docker build -t sandbox-agent-runner:online -f Dockerfile .
	$(PY) -m sandbox_agent.hostsetup.image adopt sandbox-agent-runner:online

setup: venv docker image

# The local model: llama-server built from pinned source, the model fetched and verified
# (docs/MODELS.md). About 5 minutes the first time on 2 cores; a few seconds once done.
model: venv
	@bash scripts/ensure-build-tools.sh
	@$(PY) -m sandbox_agent.localmodel ensure

demo: setup
	@bash scripts/demo.sh

# Debian's chromium for the service's browser tests (Playwright drives it; never downloads one).
browser:
	@if [ ! -x /usr/bin/chromium ] && [ "$$(id -u)" = 0 ]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	fi

# The run viewer's pictures in docs/VIEWER.md are the browser tests' own screenshots.
viewer-screenshots: setup browser
	$(PY) -m pytest -q tests/viewer
	mkdir -p docs/viewer && cp artifacts/viewer/*.png docs/viewer/

test: setup browser model
	$(PY) -m pytest $(PYTEST_ARGS)

# The whole suite RUNS times while LOAD busy loops keep the cores busy (issue 21).
test-soak: setup browser model
	$(PY) scripts/soak.py --runs $(SOAK_RUNS) --load $(LOAD) --order $(ORDER) \
		$(if $(SEED),--seed $(SEED)) -- $(PYTEST_ARGS)

# The real-model evaluation (issues 16, 29): HumanEvalFix's 82 odd-numbered rows through
# the agent (repair strategy), the greedy one-shot and one-shot best-of-N on the same rows,
# the 10-task set with 3 seeds, all 39 realrepos tasks, and the report in docs/results/.
# Hours on 2 cores: run it on a quiet machine. It resumes: running it again runs only
# what is missing (FRESH=1 starts over). HEF=all for all 164 rows, HEF=N for N odd rows.
HEF ?= odd
eval-local: setup model
	$(PY) -m devtools.eval_local --humanevalfix $(HEF) $(if $(FRESH),--fresh) $(if $(STAGES),--stages $(STAGES)) $(if $(PART),--part $(PART))

# A change to the agent against the same code without it, on the development split only
# (HumanEvalFix's even rows, evals/realrepos/dev-tasks.json): docs/EVALS.md.
eval-dev: setup model
	$(PY) -m devtools.eval_dev --variant "$(VARIANT)" $(if $(ROWS),--humanevalfix $(ROWS)) $(if $(REPOS),--realrepos $(REPOS)) $(if $(STAGES),--stages $(STAGES))

localise-recall: setup
	$(PY) -m devtools.localise_recall $(foreach t,$(TASKS),--tasks $(t)) $(if $(EXCLUDE),--exclude $(EXCLUDE))

check: venv
	.venv/bin/ruff check src tests benchmarks scripts devtools
	.venv/bin/ruff format --check src tests benchmarks scripts devtools
	.venv/bin/mypy src devtools

fmt: venv
	.venv/bin/ruff format src tests benchmarks scripts devtools
	.venv/bin/ruff check --fix src tests benchmarks scripts devtools

bench: setup model
	$(PY) -m benchmarks

stress: setup
	.venv/bin/sandbox-agent stress --runs $(RUNS) --runtime $(RUNTIME) --cpu-load $(STRESS_ARGS)

adversarial-report: setup
	$(PY) -m devtools.assurance.adversarial_report

# Every review finding's tests on the code before its fix and on this tree (long: it
# checks out and runs one old tree per fix); writes docs/REGRESSION_EVIDENCE.md.
regression-evidence: setup
	$(PY) -m devtools.assurance.regression

live-smoke: setup
	@bash scripts/live-smoke.sh

# A Ray cluster on this machine: a head and two workers, each on its own loopback
# address, each advertising sandbox slots only after its preflight passed
# (docs/CLUSTER.md). `eval --ray auto` and `serve --ray auto` find it.
cluster-up: setup
	.venv/bin/sandbox-agent cluster up

cluster-down: venv
	.venv/bin/sandbox-agent cluster down

clean:
	rm -rf .venv .pytest_cache .mypy_cache .ruff_cache
