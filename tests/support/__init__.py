"""Shared test support: where brokers come from and factories of unique resources."""
