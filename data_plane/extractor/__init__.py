"""The extractor stage: the service (pages.raw to records), replay, and the records reader."""
