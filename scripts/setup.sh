#!/usr/bin/env bash
# Installs everything dualplane needs on a fresh Debian machine; safe to run again (it skips
# what is already there). Called by `make setup`, `make demo` and `make test`.
#   - a virtualenv in .venv with the package and its pinned dependencies (constraints.txt)
#   - Java and Maven (to fetch and run Apache Kafka), RabbitMQ from Debian's packages
#   - the Kafka jars, fetched from Maven Central with mvn into ~/.cache/dualplane
#   (the optional local schema registry is built by `make test`: `dualplane stack install --with-registry`)
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
VENV=".venv"
STAMP="$VENV/.installed"

say() { printf '\033[1;34m[setup]\033[0m %s\n' "$*"; }

apt_install() {
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null; then SUDO=sudo; else
      echo "error: $* missing and not root: run \`sudo apt-get install -y $*\`" >&2; exit 1
    fi
  fi
  say "apt-get install $*"
  ${SUDO:-} apt-get update -qq
  DEBIAN_FRONTEND=noninteractive ${SUDO:-} apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# System packages: only what is missing.
missing=()
command -v java >/dev/null || missing+=(openjdk-17-jre-headless)
command -v mvn >/dev/null || missing+=(maven)
[ -x /usr/lib/rabbitmq/bin/rabbitmq-server ] || command -v rabbitmq-server >/dev/null || missing+=(rabbitmq-server)
# Only for `make test`: the report test renders the HTML report in a real headless browser.
if [ "${DUALPLANE_SETUP_TEST_TOOLS:-0}" = 1 ]; then command -v chromium >/dev/null || missing+=(chromium); fi
if [ ${#missing[@]} -gt 0 ]; then apt_install "${missing[@]}"; fi

# Python environment: reinstall only when the dependency pins changed.
if [ ! -x "$VENV/bin/python" ]; then
  say "creating $VENV with $($PYTHON --version)"
  "$PYTHON" -m venv "$VENV"
fi
if [ ! -f "$STAMP" ] || [ pyproject.toml -nt "$STAMP" ] || [ constraints.txt -nt "$STAMP" ]; then
  say "installing dualplane and pinned dependencies"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  "$VENV/bin/python" -m pip install -q -c constraints.txt -e '.[dev,local]'
  touch "$STAMP"
fi

# Kafka jars (cached outside the repo; a no-op once fetched).
"$VENV/bin/dualplane" stack install
say "ready: $VENV/bin/dualplane"
