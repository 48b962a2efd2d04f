# The app image's base without a registry: the host's own CPython (the interpreter that runs the
# project's virtualenv, so every pin in constraints.txt fits it) in /usr/local, as the official
# python images have it, on the debootstrap base. Debian bookworm's own Python (3.11.2) is too old
# for some pins. Built by scripts/compose-local.sh (context: python.tar, the interpreter without
# site-packages and tests, and the host's CA bundle, ca-certificates.crt).
ARG BASE_IMAGE=dualplane-local/debian:bookworm
FROM ${BASE_IMAGE}

# The shared libraries its extension modules link against, beyond the base image.
RUN apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
       libssl3 libsqlite3-0 libncursesw6 libreadline8 libexpat1 > /dev/null \
    && rm -rf /var/lib/apt/lists/*

ADD python.tar /usr/local/
RUN ldconfig \
    && version=$(ls /usr/local/bin | grep -m1 -E '^python3\.[0-9]+$') \
    && ln -sf "$version" /usr/local/bin/python3 \
    && ln -sf python3 /usr/local/bin/python \
    && python -c "import ssl, sqlite3, ctypes, lzma, bz2, zlib, ensurepip, venv"

# HTTPS from inside a build goes through the host's certificate authority: pip trusts its bundle.
COPY ca-certificates.crt /usr/local/share/dualplane/host-ca.crt
ENV PIP_CERT=/usr/local/share/dualplane/host-ca.crt
