"""Control plane on RabbitMQ: topology, control messages, frontier, retries, throttle state, fetcher."""
