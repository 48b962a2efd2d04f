"""Adaptive throttling: a Faust processor turns fetch-event block ratios into per-domain throttle commands."""
