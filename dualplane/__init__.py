"""dualplane: distributed crawling and extraction on a RabbitMQ control plane and a Kafka data plane."""

__version__ = "0.1.0"
