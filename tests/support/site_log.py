"""What the sample site's own request log says was fetched: the judge of "exactly once" in e2e tests."""

from __future__ import annotations

from collections import Counter

from dualplane.core.web.urls import canonicalize
from dualplane.sample_site import SampleSite


def served_pages(site: SampleSite) -> Counter[str]:
    """How often the site answered 200 for each page (robots.txt and its /_ endpoints aside)."""
    served: Counter[str] = Counter()
    for host, base in enumerate(site.urls):
        for entry in site.log(host):
            if entry.status == 200 and entry.path != "/robots.txt" and not entry.path.startswith("/_"):
                served[canonicalize(base + entry.path)] += 1
    return served
