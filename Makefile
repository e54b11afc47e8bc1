# Two commands: `make demo` and `make test`. Each sets up .venv on a fresh machine first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SHARED ?= ../shared

.PHONY: demo test check lint typecheck install clean bench serve system-deps

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# torch==2.13.0 (CPU, on this machine's disk) must come before sentence-transformers,
# or pip resolves a multi-GB CUDA build.
$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[neural,lsa,detect,llm,local-llm,server,postgres,eval,dev]'
	$(BIN)/seenbefore embedder export
	touch $(STAMP)

install: $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/lint-imports --no-logo  # [tool.importlinter] in pyproject.toml: imports flow one way

typecheck: $(STAMP)
	$(BIN)/mypy src

# The Debian packages the integration tests drive (Chromium, Alertmanager): installed when missing
# and we are root; otherwise the exact apt command is printed and make stops.
system-deps:
	bash scripts/system_deps.sh

# Everything CI must run: lint, types, and the whole test suite (integration tests included;
# the real-model tier, tests/reallm, must run, not skip).
test: system-deps lint typecheck
	SEENBEFORE_REQUIRE_REAL_LLM=1 $(BIN)/pytest -q

# Fast offline tests only, for quick local loops: property and fuzz tests at a tenth of their
# generated examples (tests/depth.py; `make test` runs them at full depth).
check: $(STAMP)
	SEENBEFORE_TEST_DEPTH=0.1 $(BIN)/pytest -q -m "not slow and not integration"

demo: $(STAMP)
	SEENBEFORE_HOME=.seenbefore-demo bash scripts/demo.sh

# the service with the sample knowledge base, for trying it (a real store: `seenbefore serve`)
serve: $(STAMP)
	$(BIN)/seenbefore serve --sample

bench: $(STAMP)
	$(BIN)/python benchmarks/ingest.py --scifact $(SHARED)/data/beir/scifact

clean:
	rm -rf $(VENV) .seenbefore .seenbefore-demo .pytest_cache .mypy_cache .ruff_cache
