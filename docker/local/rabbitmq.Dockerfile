# RabbitMQ without a registry: Debian's rabbitmq-server (the embedded stack's) with the management
# plugin, listening for other containers, with the official image's guest login and its
# `rabbitmq-diagnostics -q ping` healthcheck. Built by scripts/compose-local.sh.
ARG BASE_IMAGE=dualplane-local/debian:bookworm
FROM ${BASE_IMAGE}

RUN apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
       rabbitmq-server > /dev/null \
    && rm -rf /var/lib/apt/lists/* \
    && rabbitmq-plugins enable --offline rabbitmq_management > /dev/null

COPY rabbitmq/rabbitmq.conf /etc/rabbitmq/rabbitmq.conf

# The node's database and Erlang cookie live in /var/lib/rabbitmq (compose mounts a volume there).
ENV HOME=/var/lib/rabbitmq
USER rabbitmq
WORKDIR /var/lib/rabbitmq
EXPOSE 5672 15672
CMD ["/usr/lib/rabbitmq/bin/rabbitmq-server"]
