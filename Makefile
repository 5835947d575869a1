# coflowemu: the two commands of the README.
#   make demo  - set up .venv and run the main job on the simulator (no root, no network)
#   make test  - set up everything (Debian packages for the emulation included) and run
#                the whole test suite
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test setup warm system demo-emulation benchmarks clean

$(STAMP): setup.py
	@$(PY) -m venv --help >/dev/null 2>&1 || { echo "python3 venv missing: run 'apt-get install -y python3-venv' as root"; exit 2; }
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,emulation]'
	touch $(STAMP)

setup: $(STAMP)

# numba kernels compiled (or loaded from their cache) before anything is timed
warm: setup
	$(BIN)/python -m emulate.sim.warmup

demo: warm
	$(BIN)/coflowemu demo

system:
	bash scripts/setup-system.sh

# --durations: the slowest tests in the log, to keep the suite well under 20 min on CI.
# The tests that do not emulate run on every CPU; then the emulation tests (marked by
# tests/conftest.py) alone, one at a time: their timing is what they check. Both run
# whatever the first gives; the target fails if either does.
test: warm system
	$(BIN)/python -m pytest -q -n auto --durations=25 -m "not emulation" tests; a=$$?; \
	$(BIN)/python -m pytest -q --durations=25 -m emulation tests; b=$$?; \
	test $$a -eq 0 && test $$b -eq 0

demo-emulation: warm system
	$(BIN)/coflowemu demo-emulation

benchmarks: warm
	for b in benchmarks/*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	-$(BIN)/coflowemu clean
	rm -rf results
