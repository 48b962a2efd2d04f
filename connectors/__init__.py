"""Connectors to object storage: the S3 sink, the S3 seed source, the claim-check store."""
