#!/bin/sh
# The official image's partition reassignment tool (docs/multi-machine.md: after a broker is lost).
exec /opt/kafka/bin/kafka-run-class org.apache.kafka.tools.reassign.ReassignPartitionsCommand "$@"
