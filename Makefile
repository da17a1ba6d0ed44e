# Set-up and entry points. `make evaluate` and `make test` each create .venv if missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
JOBS ?= 2

.PHONY: evaluate test lint format bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# torch first: the pinned CPU wheel; a bare `torch` requirement would pull the CUDA build.
# The install builds the C DRAM engine (setup.py); nmp.warmup then compiles the numba kernels
# into numba's cache (about a minute, once), so that first runs do not wait for compilers.
$(STAMP): $(BIN)/python pyproject.toml setup.py
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[test]'
	$(BIN)/python -m nmp.warmup
	touch $(STAMP)

evaluate: $(STAMP)
	$(BIN)/nmp evaluate

test: $(STAMP)
	$(BIN)/ruff format --check nmp tests benchmarks
	$(BIN)/ruff check nmp tests benchmarks
	$(BIN)/mypy
	$(BIN)/python -m pytest -n $(JOBS) -q --durations=10

lint: $(STAMP)
	$(BIN)/ruff format nmp tests benchmarks
	$(BIN)/ruff check --fix nmp tests benchmarks

# Every benchmark but those that need a second checkout, libraries to compare, a GPU's own
# tools or a device run (docs/benchmarks.md); the GPU ones that have a CPU check run it.
bench: $(STAMP)
	for b in benchmarks/*.py; do args=; case $$b in */_*|*/before_after.py|*/gpu_device_*|*_ab.py|*_ab_points.py|*/peer_*|\
		*/gpu_launch_floor.py|*/gpu_handwritten_sass.py) \
		continue;; \
		*/gpu_kernels.py|*/gpu_latency.py|*/gpu_validate.py) args=--dry-run;; \
		*/engine_instructions.py) command -v valgrind >/dev/null || { echo "$$b: skipped (no valgrind)"; continue; };; esac; \
		$(BIN)/python $$b $$args || exit 1; done

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache nmp/memory/engine-*.so
