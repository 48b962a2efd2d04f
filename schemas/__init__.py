"""Versioned Avro schemas of every Kafka payload, their serializers and compatibility rules."""
