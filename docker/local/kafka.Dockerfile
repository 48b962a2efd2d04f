# Apache Kafka (KRaft) without a registry: the jars `dualplane stack install` fetched with mvn (the
# embedded stack's), on Debian's JRE. It reads KAFKA_* variables and CLUSTER_ID like the official
# apache/kafka image, and has the same /opt/kafka/bin/kafka-broker-api-versions.sh, so
# docker/compose.yaml's kafka service runs unchanged on it. Built by scripts/compose-local.sh
# (context: libs/ plus this folder's kafka/ files).
ARG BASE_IMAGE=dualplane-local/debian:bookworm
FROM ${BASE_IMAGE}

RUN apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
       openjdk-17-jre-headless > /dev/null \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 1000 appuser \
    && useradd --system --uid 1000 --gid appuser --home-dir /opt/kafka --shell /usr/sbin/nologin appuser \
    && install -d -o appuser -g appuser /var/lib/kafka/data /opt/kafka/config

COPY libs/ /opt/kafka/libs/
COPY kafka/bin/ /opt/kafka/bin/
COPY kafka/log4j.properties /opt/kafka/config/log4j.properties

ENV KAFKA_HEAP_OPTS="-Xmx512m -Xms256m"
USER appuser
EXPOSE 9092
ENTRYPOINT ["/opt/kafka/bin/run-kafka"]
