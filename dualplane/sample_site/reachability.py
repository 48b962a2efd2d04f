"""What a polite crawler can reach: a breadth-first walk over the site model, without HTTP.

The walk starts at every host's ``/``, follows ``<a href>`` links to the site's own hosts, skips
what robots.txt disallows (``/private/``), follows redirects and does not look inside 404s.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

from dualplane.sample_site.facets import is_trap
from dualplane.sample_site.routes import SiteModel
from dualplane.sample_site.site_pages import DISALLOWED_PREFIX
from dualplane.sample_site.spec import SiteSpec


@dataclass
class Reachability:
    """The outcome of the walk, as absolute URLs.

    ``pages``: answered 200 (redirect targets included, redirecting URLs not). ``redirects``: each
    redirecting URL and where it points. ``broken``: answered 404. ``disallowed``: linked, but
    robots.txt forbids fetching them.
    """

    pages: set[str] = field(default_factory=set)
    redirects: dict[str, str] = field(default_factory=dict)
    broken: set[str] = field(default_factory=set)
    disallowed: set[str] = field(default_factory=set)


def explore(spec: SiteSpec) -> Reachability:
    """Walk the whole site described by ``spec`` (``base_port`` must be known)."""
    model = SiteModel(spec)
    hosts = {urlsplit(origin).netloc: index for index, origin in enumerate(spec.origins())}
    result = Reachability()
    queue = deque(origin + "/" for origin in spec.origins())
    seen = set(queue)
    while queue:
        url = queue.popleft()
        parts = urlsplit(url)
        if parts.path.startswith(DISALLOWED_PREFIX):
            result.disallowed.add(url)
            continue
        response = model.resolve(hosts[parts.netloc], parts.path, parts.query)
        if response.location is not None:
            target = urljoin(url, response.location)
            result.redirects[url] = target
            links: tuple[str, ...] = (target,)
        elif response.status == 200:
            result.pages.add(url)
            links = response.links
        else:
            result.broken.add(url)
            continue
        for link in links:
            linked = urlsplit(link)
            # Trap pages are endless: not part of the site a crawl is to fetch whole (facets.py).
            trap = linked.netloc in hosts and hosts[linked.netloc] in spec.faceted_hosts
            if (
                link not in seen
                and linked.netloc in hosts
                and not (trap and is_trap(linked.path, linked.query))
            ):
                seen.add(link)
                queue.append(link)
    return result


def reachable_urls(spec: SiteSpec) -> set[str]:
    """Every URL a polite crawler starting at each host's ``/`` fetches with status 200."""
    return explore(spec).pages
