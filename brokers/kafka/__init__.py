"""Kafka plumbing: clients, topics, bounded reads, lag and the schema topic; imports no stage."""
