"""Extraction: from a raw page's bytes to links and (with the page record) structured data."""
