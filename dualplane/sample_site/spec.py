"""What a sample site looks like: its seed, size, ports, latency and anti-bot policy.

A :class:`SiteSpec` is all the site's content depends on: the same spec (ports included, since
pages link across hosts by absolute URL) gives byte-identical pages in every process.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from dualplane.sample_site.exceptions import SampleSiteError

HostKind = Literal["shop", "news", "mixed"]
AntiBotMode = Literal["429", "captcha", "mixed"]

HOST_KINDS: tuple[HostKind, ...] = ("shop", "news", "mixed")
LOOPBACK = "127.0.0.1"
MAX_PORT = 65535


@dataclass(frozen=True)
class AntiBot:
    """Block clients that exceed ``max_rps`` requests per second on one host.

    Requests are counted over a sliding 1 s window (``1 / max_rps`` seconds when ``max_rps`` < 1,
    allowing one request in it). Beyond the limit a host answers, by ``mode``: ``429`` with a
    ``Retry-After: retry_after_s`` header; ``captcha`` with a tiny challenge page and status 200;
    ``mixed`` alternating the two. ``hosts`` names the host indices it applies to (None: all).
    """

    max_rps: float
    mode: AntiBotMode = "429"
    retry_after_s: int = 5
    hosts: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if self.max_rps <= 0:
            raise SampleSiteError(f"AntiBot max_rps must be > 0, got {self.max_rps}; use None to disable")
        if self.mode not in ("429", "captcha", "mixed"):
            raise SampleSiteError(f"AntiBot mode must be '429', 'captcha' or 'mixed', got {self.mode!r}")
        if self.retry_after_s < 0:
            raise SampleSiteError(f"AntiBot retry_after_s must be >= 0, got {self.retry_after_s}")

    def applies_to(self, host: int) -> bool:
        return self.hosts is None or host in self.hosts


@dataclass(frozen=True)
class Changes:
    """Every ``period_s`` seconds (at least 1: HTTP dates count whole seconds) a ``share`` of the
    products changes. ``epoch_s`` is when step 0 begins, in epoch seconds of the site's clock
    (0: when the site starts; :attr:`SampleSite.spec` then holds the real one).
    See :mod:`dualplane.sample_site.changes`.
    """

    period_s: float = 60.0
    share: float = 0.1
    epoch_s: float = 0.0

    def __post_init__(self) -> None:
        if not self.period_s >= 1:
            raise SampleSiteError(f"Changes period_s must be >= 1 s, got {self.period_s}")
        if not 0 < self.share <= 1:
            raise SampleSiteError(f"Changes share must be in (0, 1], got {self.share}")

    def step(self, at_s: float) -> int:
        """The step site time ``at_s`` falls in (0 before the epoch)."""
        return max(0, math.floor((at_s - self.epoch_s) / self.period_s))

    def step_start_s(self, step: int) -> float:
        return self.epoch_s + step * self.period_s

    def modified_at(self, step: int) -> datetime:
        """When the change of ``step`` happened, to the whole second (as an HTTP date says it)."""
        return datetime.fromtimestamp(math.floor(self.step_start_s(step)), UTC)


@dataclass(frozen=True)
class SiteSpec:
    """Seed and size of a sample site.

    ``hosts`` hosts are served on consecutive ports from ``base_port`` (0: the site picks a free
    range when it starts; :attr:`SampleSite.spec` then holds the real one). Host ``i`` is of kind
    ``HOST_KINDS[i % 3]``: a shop, a news site, a mixed site. ``pages_per_host`` counts the
    products and articles of each host; home, listing and information pages come on top.
    ``latency_ms`` delays every page response so that concurrency is observable. ``public_host``
    is the name in the site's URLs (pages link across hosts by absolute URL): the loopback address,
    or the name crawlers reach it by when it serves other machines (``sample-site`` in compose).
    ``changes``: products change over time, and pages carry ``ETag`` and ``Last-Modified`` and
    answer conditional requests with 304 (None: a site that never changes, without validators).
    ``js_hosts``: shop hosts whose product pages draw price and stock with a script from a JSON
    endpoint (see :mod:`dualplane.sample_site.js_shop`); only a rendering crawler sees them.
    ``faceted_hosts``: shop hosts with faceted navigation and endless trap pages beside their real
    ones (see :mod:`dualplane.sample_site.facets`); a crawl needs a budget or trap limits there.
    ``consent_hosts`` / ``login_hosts``: hosts whose pages need a consent form's region cookie, or
    whose product pages need a login's session cookie (see :mod:`dualplane.sample_site.sessions`).
    ``crawl_delay_s``: every host's robots.txt asks for this ``Crawl-delay`` (None: none), so a
    polite crawler's rate there is bound by the site, not by the crawler's capacity.
    """

    seed: int = 7
    hosts: int = 3
    pages_per_host: int = 100
    base_port: int = 0
    latency_ms: int = 20
    anti_bot: AntiBot | None = None
    public_host: str = LOOPBACK
    changes: Changes | None = None
    js_hosts: tuple[int, ...] = ()
    faceted_hosts: tuple[int, ...] = ()
    consent_hosts: tuple[int, ...] = ()
    login_hosts: tuple[int, ...] = ()
    crawl_delay_s: float | None = None

    def __post_init__(self) -> None:
        if self.hosts < 1:
            raise SampleSiteError(f"a sample site needs at least 1 host, got hosts={self.hosts}")
        if self.pages_per_host < 1:
            raise SampleSiteError(f"pages_per_host must be >= 1, got {self.pages_per_host}")
        if self.latency_ms < 0:
            raise SampleSiteError(f"latency_ms must be >= 0, got {self.latency_ms}")
        if self.crawl_delay_s is not None and not self.crawl_delay_s > 0:
            raise SampleSiteError(f"crawl_delay_s must be > 0 (or None), got {self.crawl_delay_s}")
        if self.anti_bot is not None and self.anti_bot.hosts is not None:
            unknown = [host for host in self.anti_bot.hosts if not 0 <= host < self.hosts]
            if unknown:
                raise SampleSiteError(f"AntiBot hosts {unknown} do not exist; hosts are 0..{self.hosts - 1}")
        chosen_hosts = {
            "js_hosts": self.js_hosts,
            "faceted_hosts": self.faceted_hosts,
            "consent_hosts": self.consent_hosts,
            "login_hosts": self.login_hosts,
        }
        for name, chosen in chosen_hosts.items():
            if any(not 0 <= host < self.hosts for host in chosen):
                raise SampleSiteError(
                    f"{name} {chosen} name hosts that do not exist; hosts are 0..{self.hosts - 1}"
                )
        if self.base_port < 0 or self.base_port + self.hosts - 1 > MAX_PORT:
            raise SampleSiteError(
                f"base_port={self.base_port} with {self.hosts} hosts leaves the port range; "
                "use 0 to pick free ports"
            )

    def kind(self, host: int) -> HostKind:
        """The kind of host ``host`` (0-based)."""
        return HOST_KINDS[host % len(HOST_KINDS)]

    def origin(self, host: int) -> str:
        """``http://PUBLIC_HOST:PORT`` of host ``host``; needs a resolved ``base_port``."""
        if self.base_port == 0:
            raise SampleSiteError(
                "this SiteSpec has base_port=0, so its URLs are not known yet; start a SampleSite "
                "and use site.spec, or give base_port explicitly"
            )
        return f"http://{self.public_host}:{self.base_port + host}"

    def origins(self) -> list[str]:
        return [self.origin(host) for host in range(self.hosts)]
