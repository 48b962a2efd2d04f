#!/bin/sh
# The official image's healthcheck tool: lists the broker's API versions (exit 0 once it answers).
exec /opt/kafka/bin/kafka-run-class kafka.admin.BrokerApiVersionsCommand "$@"
