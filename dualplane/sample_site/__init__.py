"""A deterministic, multi-host sample website on loopback, for the demo, tests and benchmarks.

Usage::

    with SampleSite(SiteSpec(seed=7, hosts=3, pages_per_host=100)) as site:
        fetched = my_crawler(site.seeds)            # http://127.0.0.1:PORT/ of each host
        assert fetched == site.reachable_urls()     # what a polite crawler can reach
        site.truth()                                # what an extractor should find
        site.stats().hosts[0].max_in_flight         # the site's view of the traffic
"""

from __future__ import annotations

from dualplane.sample_site.exceptions import SampleSiteError
from dualplane.sample_site.reachability import Reachability, explore, reachable_urls
from dualplane.sample_site.routes import Response, SiteModel
from dualplane.sample_site.site import SampleSite
from dualplane.sample_site.spec import AntiBot, AntiBotMode, Changes, HostKind, SiteSpec
from dualplane.sample_site.stats import HostStats, LogEntry, SiteStats
from dualplane.sample_site.truth import ArticleTruth, ProductTruth, Truth, ground_truth

__all__ = [
    "AntiBot",
    "AntiBotMode",
    "ArticleTruth",
    "Changes",
    "HostKind",
    "HostStats",
    "LogEntry",
    "ProductTruth",
    "Reachability",
    "Response",
    "SampleSite",
    "SampleSiteError",
    "SiteModel",
    "SiteSpec",
    "SiteStats",
    "Truth",
    "explore",
    "ground_truth",
    "reachable_urls",
]
