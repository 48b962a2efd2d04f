"""The fetcher: crawl tasks in from RabbitMQ, raw pages and fetch events out to Kafka."""
