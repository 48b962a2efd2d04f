"""Settings of the stages and the local stack: limits, frontier, fetch, extract, stack."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import NoDecode

from dualplane.core.settings import checks
from dualplane.core.settings.base import Section, section
from dualplane.core.settings.fields import AllowHosts, HeaderValue, Proxies, http_url


def _default_data_dir() -> Path:
    return Path.home() / ".local" / "share" / "dualplane"


class LimitSettings(Section):
    """Sizes and concurrency ceilings shared by the services."""

    model_config = section("LIMIT_")

    max_page_bytes: int = Field(default=5 * 1024 * 1024, ge=1024)
    fetch_concurrency: int = Field(default=64, ge=1)
    domain_concurrency: int = Field(default=2, ge=1)
    domain_delay_ms: int = Field(default=1000, ge=0)


class FrontierSettings(Section):
    """The frontier: dedup storage, admission caps and robots.txt handling."""

    model_config = section("FRONTIER_")

    data_dir: Path | None = None  # default: DUALPLANE_STACK_DATA_DIR/frontier
    # Per-domain admission: at most k x P_d tasks outstanding per domain; the rest wait in a backlog.
    outstanding_per_slot: int = Field(default=8, ge=1)
    # A paced domain (a delay, a Crawl-delay) gets its rate times this many tasks instead, within
    # [2, k x P_d]: about a task's time from issue to final report when only its pace holds it, with
    # room for a loaded machine. 10 leaves the defaults (P_d 2, 1 s delay: 18 > 16) at k x P_d.
    # 0: every domain k x P_d. See control_plane/frontier/slots.py.
    paced_transit_s: float = Field(default=10.0, ge=0)
    # Global backpressure: past this many outstanding tasks the frontier stops consuming discovery.
    max_outstanding: int = Field(default=10_000, ge=1)
    seen_exact_limit: int = Field(default=1_000_000, ge=0)
    seen_expected_items: int = Field(default=50_000_000, ge=1000)
    seen_false_positive_rate: float = Field(default=0.001, gt=0, lt=0.5)
    tracking_params: str = ""  # comma-separated extra query parameters to strip
    robots_ttl_s: float = Field(default=86_400, gt=0)
    # The whole robots.txt answer (connect, head, redirects, body) within this, or the site counts as
    # unreachable for 5 min. The shard serves its other sites meanwhile (RobotsCache.ready).
    robots_timeout_s: float = Field(default=10.0, gt=0, le=300)
    max_attempts: int = Field(default=5, ge=1)
    snapshot_interval_s: float = Field(default=1.0, gt=0)
    # A pass (one changelog transaction, one SQLite commit, one AMQP transaction) waits this long
    # after the previous one for more messages to share it, unless pass_messages are waiting already:
    # messages trickling in one by one otherwise cost a Kafka transaction each.
    pass_interval_ms: int = Field(default=100, ge=0)
    pass_messages: int = Field(default=100, ge=1)
    # A monitor's URL answering 404 or 410 on this many visits in a row leaves its schedule (a `gone`
    # change event); one visit could be a deploy's blip, and a dead URL must not be revisited for ever.
    monitor_gone_after: int = Field(default=2, ge=1, le=100)


class FetchSettings(Section):
    """The fetch side of the control contract: capacity, politeness and identity."""

    model_config = section("FETCH_")

    user_agent: HeaderValue = "dualplane/0.1 (+https://example.invalid/dualplane)"
    # Extra delay on top of DUALPLANE_LIMIT_DOMAIN_DELAY_MS, as a fraction: 0.2 = up to +20%.
    # Against "at most R requests in any second" a throttled slot is safe only at its shortest
    # hold, so its mean rate reaches at most 1 / (1 + jitter / 2) of R: 80% at the former 0.5
    # (the throttle could never hold the 80% issue 33 asks for), 91% at 0.2, still never periodic.
    delay_jitter: float = Field(default=0.2, ge=0, le=2)
    permit_wait_s: float = Field(default=2.0, ge=0)
    # On SIGTERM a fetcher stops pulling and finishes its running requests for at most this long
    # (below the 30 s a supervisor waits); what is still running then is requeued by the broker.
    drain_timeout_s: float = Field(default=20.0, ge=0)
    connect_timeout_s: float = Field(default=10.0, gt=0)
    read_timeout_s: float = Field(default=30.0, gt=0)
    # The whole fetch, redirects and body included: a server dripping a byte per read timeout
    # would otherwise hold a permit (and a slot) for as long as it likes.
    total_timeout_s: float = Field(default=60.0, gt=0)
    # How long a fetched page waits for Kafka to confirm it (and its fetch event) before the task
    # goes round the shortest delay tier and the producer is replaced: longer than a broker restart,
    # far shorter than librdkafka's 5 min default, which held a fetcher's permits that long.
    hand_off_timeout_s: float = Field(default=30.0, ge=1)
    # Loopback and private addresses are refused unless listed here (tests, the demo).
    allow_hosts: AllowHosts = ""
    # 0: a 3xx is recorded and its target goes back through the frontier (deduplicated, so every
    # page is fetched once per job). >0: follow inline, recording the chain (may refetch targets).
    max_redirects: int = Field(default=0, ge=0)
    backend: Literal["direct", "scraping_api", "browser"] = "direct"
    # The browser backend (control_plane/fetcher/backends/browser.py): Debian's chromium, at most
    # browser_contexts pages rendering at once per fetcher, a new browser after pages_per_launch
    # renders; each render waits for browser_wait (load or networkidle) and browser_wait_selector,
    # each at most browser_wait_s, then keeps the DOM as it stands.
    browser_executable: str = "/usr/bin/chromium"
    browser_contexts: int = Field(default=4, ge=1, le=64)
    browser_pages_per_launch: int = Field(default=200, ge=1)
    browser_wait: Literal["load", "networkidle"] = "load"
    browser_wait_selector: str = ""
    browser_wait_s: float = Field(default=10.0, gt=0, le=120)
    scraping_api_url: Annotated[str, http_url("https://api.scrapingant.com/v2/general")] = (
        "https://api.scrapingant.com/v2/general"
    )
    scraping_api_key: SecretStr | None = None
    scraping_api_render_js: bool = False
    proxies: Proxies = ""  # comma-separated proxy URLs, rotated; banned ones are quarantined
    # Claim check: a body larger than this goes to S3 (content-addressed, DUALPLANE_S3_*) and the
    # raw page on Kafka carries its reference. 512 KiB keeps every raw_page message (body plus
    # envelope) under Kafka's default 1 MiB message limit while still inlining the vast majority of
    # HTML pages; set it to DUALPLANE_LIMIT_MAX_PAGE_BYTES or more to keep every body inline.
    inline_body_max_bytes: int = Field(default=512 * 1024, ge=1024)
    # A fetched page's links go to the frontier, at most this many (in document order); the rest are
    # counted (dualplane_fetch_links_over_limit_total, the job's links_over_limit) and the page logged.
    max_links_per_page: int = Field(default=2000, ge=0)
    # Follow links marked nofollow too (rel nofollow, ugc, sponsored, or a robots <meta>).
    follow_nofollow: bool = False


class ExtractSettings(Section):
    """The extractor: which record schema it writes, how it batches transactions, what it will parse."""

    model_config = section("EXTRACT_")

    schema_version: int | None = Field(default=None, ge=1)  # None: the latest page_record version
    batch_size: int = Field(default=200, ge=1)  # pages per Kafka transaction at most
    # A transaction commits once its pages took this long to extract, even short of batch_size: its
    # records become visible (read_committed) only with the commit.
    transaction_ms: int = Field(default=250, ge=1, le=30_000)
    # Bodies larger than this are dead-lettered ("oversize: ..."), not parsed: extraction takes about
    # 1 s and 35x the body in memory per MiB of HTML, so a 20 MiB page would stall a transaction.
    max_html_bytes: int = Field(default=5 * 1024 * 1024, ge=1024)
    # Extractor plugin by domain (a domain covers its subdomains), for pages whose job chose none:
    # DUALPLANE_EXTRACT_EXTRACTOR_BY_DOMAIN='{"books.example.com": "reviews"}'.
    # NoDecode: parsed by the validator below, whose error names the variable (pydantic-settings'
    # own JSON parsing raised a SettingsError the CLI could only show as a traceback).
    extractor_by_domain: Annotated[dict[str, str], NoDecode] = Field(default_factory=dict)
    # A stable identity per extractor slot (a StatefulSet's pod name, a systemd instance), unique among
    # the running extractors: a restarted extractor then gets its partitions back at once (Kafka static
    # membership) and aborts its predecessor's open transaction at once (same transactional id),
    # instead of both waiting out timeouts (~45-60 s). With --processes N each child adds -<i>.
    instance_id: str | None = Field(default=None, pattern=r"^[A-Za-z0-9._-]{1,100}$")

    @field_validator("extractor_by_domain", mode="before")
    @classmethod
    def _a_json_object(cls, value: object) -> object:
        try:
            return checks.json_object(value)
        except ValueError as error:
            raise ValueError(f'{error}, such as {{"books.example.com": "reviews"}}') from None


class StackSettings(Section):
    """The embedded local stack: where it keeps data and which Kafka release it runs."""

    model_config = section("STACK_")

    data_dir: Path = Field(default_factory=_default_data_dir)
    kafka_version: str = "3.9.1"
    kafka_controller_port: int | None = Field(default=None, ge=1, le=65535)
    kafka_heap_mb: int = Field(default=768, ge=256)
    rabbitmq_dist_port: int | None = Field(default=None, ge=1, le=65535)
    start_timeout_s: float = Field(default=120.0, gt=0)
