"""Data plane on Kafka: topics and clients, raw pages, extraction, replay, Faust processors."""
