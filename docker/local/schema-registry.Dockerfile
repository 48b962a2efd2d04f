# A Confluent-compatible schema registry without a registry of images: the rivven-schema binary
# `dualplane stack install --with-registry` built (the embedded stack's), with curl for compose's
# healthcheck. Schemas are kept in memory. Built by scripts/compose-local.sh (context: the binary).
ARG BASE_IMAGE=dualplane-local/debian:bookworm
FROM ${BASE_IMAGE}

RUN apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends curl > /dev/null \
    && rm -rf /var/lib/apt/lists/*
COPY rivven-schema /usr/local/bin/rivven-schema

USER nobody
EXPOSE 8081
CMD ["rivven-schema", "serve", "--host", "0.0.0.0", "--port", "8081"]
