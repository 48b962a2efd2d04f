"""Fetch backends: the FetchBackend interface (``base``) and one module per implementation."""
