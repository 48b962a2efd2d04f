"""Broker plumbing shared by both planes: RabbitMQ (:mod:`.amqp`) and Kafka (:mod:`.kafka`).

Every stage talks to both brokers (the fetcher reads RabbitMQ and writes Kafka, the extractor reads
Kafka and publishes links to RabbitMQ, the frontier keeps its changelog in Kafka), so the clients sit
below both planes rather than inside one of them. They import no stage.
"""
