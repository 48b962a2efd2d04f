"""Control plane stages on RabbitMQ: the frontier (admission, retries, job progress) and the fetcher."""
