# The two commands a fresh machine needs (see README): `make demo` and `make test`.
# Both install everything first (scripts/setup.sh is idempotent) and are safe to repeat.
VENV := .venv
BIN := $(VENV)/bin

.PHONY: setup demo test lint stack-up stack-down

setup:
	@scripts/setup.sh

demo: setup
	$(BIN)/dualplane demo

# The tests also need the optional schema registry (built once per machine, minutes on 2 cores)
# and Debian's chromium (the report test renders the HTML report headless).
test:
	@DUALPLANE_SETUP_TEST_TOOLS=1 scripts/setup.sh
	$(BIN)/dualplane stack install --with-registry
	$(BIN)/pytest

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

stack-up: setup
	$(BIN)/dualplane stack up

stack-down: setup
	$(BIN)/dualplane stack down
