"""Data plane stages on Kafka: extraction (library and service), replay, the Faust throttle."""
