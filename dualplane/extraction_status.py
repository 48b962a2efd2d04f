"""What ``dualplane status`` shows of extraction itself: pages, CPU per page, main texts that failed.

These are counted inside the extractor processes (Prometheus: ``dualplane_extract_cpu_seconds``,
``dualplane_extract_text_failures_total``), not in the brokers that the rest of ``status`` reads. When
the services serve metrics (``DUALPLANE_METRICS_PORT``; ``dualplane run`` gives child ``i`` the port
plus ``i``), :func:`extraction` reads every endpoint found from that port on and adds them up, so a text
step that fails shows in ``status`` rather than only as records without a main text.
"""

from __future__ import annotations

from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from dualplane.core.settings import Settings

SCANNED_PORTS = 8
"""Endpoints read from the metrics port on: ``dualplane run``'s children (an extractor per core and one
for the other services) on a machine of up to seven cores."""
SCRAPE_TIMEOUT_S = 0.5
CPU = "dualplane_extract_cpu_seconds"
FAILURES = "dualplane_extract_text_failures"


def extraction(settings: Settings) -> dict[str, Any] | None:
    """Pages extracted, their CPU ms/page and the failed main texts by engine and error, summed over the
    extractor endpoints found; ``None`` when metrics are off or no extractor answers."""
    if not settings.metrics.port:
        return None
    pages = cpu_s = 0.0
    failures: dict[str, int] = {}
    extractors = 0
    for offset in range(SCANNED_PORTS):
        url = f"http://{settings.metrics.bind}:{settings.metrics.port + offset}/metrics"
        try:
            text = httpx.get(url, timeout=SCRAPE_TIMEOUT_S).text
        except httpx.HTTPError:
            continue  # no process there
        found = False
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == f"{CPU}_count":
                    pages, found = pages + sample.value, True
                elif sample.name == f"{CPU}_sum":
                    cpu_s += sample.value
                elif sample.name == f"{FAILURES}_total":
                    key = f"{sample.labels.get('engine', '?')}: {sample.labels.get('error', '?')}"
                    failures[key] = failures.get(key, 0) + int(sample.value)
        extractors += found
    if not extractors:
        return None
    return {
        "extractors": extractors,
        "pages": int(pages),
        "cpu_ms_per_page": round(1000 * cpu_s / pages, 2) if pages else None,
        "text_failures": sum(failures.values()),
        "text_failures_by_error": failures,
    }
