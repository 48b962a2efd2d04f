"""The throttle feedback loop against the sample site's anti-bot mode, recorded as a time series.

The whole loop runs for real: the frontier and a fetcher (threads of this process) crawl one sample
site host that answers 429 (or a captcha page) beyond ``max_rps`` requests per second; the fetch
events go through Kafka to the Faust processor (``dualplane run throttle``, a child process), whose
commands come back over the RabbitMQ throttle exchange to the fetcher and the frontier. Halfway the
site relaxes (anti-bot off) and the limits should climb back.

Every second a :class:`Sample` records what the *site* measured (requests per second, the share of
them it blocked) next to the limits the fleet was running at (a :class:`ThrottleView`, the same
object the fetcher holds). The end-to-end test asserts on the series and
``benchmarks/throttle_loop.py`` plots it.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from dualplane.brokers.kafka.topics import prepare_data_plane
from dualplane.control_plane.frontier import JobClient
from dualplane.core.settings import FetchSettings, LimitSettings, Settings, ThrottleSettings
from dualplane.core.web.urls import domain_of
from dualplane.data_plane.throttle import ThrottleError, ThrottleView, read_snapshot
from dualplane.namespaces import private_namespace
from dualplane.sample_site import AntiBot, SampleSite, SiteSpec
from dualplane.services import ServiceGroup

Phase = Literal["blocking", "relaxed"]
SERVICES = ("frontier", "fetcher", "throttle")


@dataclass(frozen=True)
class LoopSpec:
    """The site, the fleet's starting limits and the processor's tuning for one run of the loop.

    By default the processor runs at the **shipped defaults** (``DUALPLANE_THROTTLE_*`` untouched:
    10-minute windows with a fast layer of 6 s, issue 33), and only P_d and the delay are opened
    up (8 and 0) so that the site's limit binds, against a fresh domain with 20 ms responses.
    ``tuned=True`` is the second row: the 6 s windows the loop used to run with, one layer.
    """

    max_rps: float = 5.0
    mode: Literal["429", "captcha"] = "captcha"
    retry_after_s: int = 1  # a 429's Retry-After; 0: none (the fetcher reads 0 as no header)
    ceiling: int = 8  # P_d before any command, and the recovery target
    delay_ms: int = 0
    blocking_s: float = 90.0
    relaxed_s: float = 60.0
    pages: int = 0  # the host's pages (0: enough to crawl all along); timed to the 500th page served
    tuned: bool = False
    # A second row: the fetcher's cooldown after any block without Retry-After (a captcha, a 429
    # or a 403), in ms, instead of the per-outcome DUALPLANE_THROTTLE_COOLDOWN_CHALLENGE_MS and
    # _COOLDOWN_BASE_MS defaults (2000: the single cooldown shipped before them). None: the defaults.
    cooldown_base_ms: int | None = None
    # A second row: probes onto a known limit wait up to recovery_s x 2^this after failing
    # (DUALPLANE_THROTTLE_PROBE_BACKOFF_MAX; 2, i.e. 16 s, shipped). None: the default.
    probe_backoff_max: int | None = None
    threshold: float = 0.05  # the shipped default; the tuned row sets it too
    settle_s: float = 30.0  # the first seconds, where the fleet finds the limit, are not "held"

    @property
    def delay_jitter(self) -> float:
        """The fleet's hold spread (DUALPLANE_FETCH_DELAY_JITTER): its default (0.2), as tuned.
        Against "at most R requests in any second" a slot is safe only if its shortest hold is, so
        the mean rate can reach at most 1 / (1 + jitter / 2) of R: 80% at 0.5, 91% at 0.2."""
        return float(FetchSettings.model_fields["delay_jitter"].default)

    @property
    def site_pages(self) -> int:
        """Enough pages that the fleet is still crawling when the run ends, at any limit."""
        return self.pages or max(600, int(self.max_rps * self.blocking_s * 1.2) + 300)

    @property
    def label(self) -> str:
        if self.tuned:
            return "tuned: 6 s windows, 1 s steps"
        if self.cooldown_base_ms is not None:
            return f"defaults, but one {self.cooldown_base_ms} ms cooldown without Retry-After"
        if self.probe_backoff_max is not None:
            return f"defaults, but probe waits up to recovery_s x 2^{self.probe_backoff_max}"
        return "shipped defaults"

    def throttle(self, base: ThrottleSettings) -> ThrottleSettings:
        """The processor's tuning for this run (it reaches the child process through ``to_env``)."""
        own: dict[str, object] = {"offset_reset": "earliest"}  # a fresh group reads the run's events
        if not self.tuned:
            defaults = ThrottleSettings.model_construct()  # every field at its default, no env read
            if self.cooldown_base_ms is not None:
                own["cooldown_base_ms"] = own["cooldown_challenge_ms"] = self.cooldown_base_ms
            if self.probe_backoff_max is not None:
                own["probe_backoff_max"] = self.probe_backoff_max
            return base.model_copy(update={**defaults.model_dump(), **own, "app_id": base.app_id})
        return base.model_copy(
            update={
                **own,
                "window_size_s": 6,
                "window_step_s": 1,
                "threshold": self.threshold,
                "min_samples": 5,
                "recovery_min_samples": 3,
                "recovery_s": 4.0,
                # After a captcha a fetcher leaves the site alone this long: 1 s, as a 429's
                # Retry-After: 1 (the production default is 2 s).
                "cooldown_base_ms": 1000,
                "cooldown_cap_ms": 2000,
                "pause_ratio": 0.98,  # this loop is about finding the limit, not pausing
                "probe_backoff_max": 2,
            }
        )


@dataclass(frozen=True)
class Sample:
    """One second of the loop: the site's view and the fleet's limits for the protected host."""

    t_s: float
    phase: Phase
    requests: int  # served by the host in this second
    blocked: int  # of which answered 429 or a captcha page
    rate_10s: float  # the host's requests/s over the last 10 s
    concurrency: int  # P_d the fleet runs at
    delay_ms: int
    source: str  # where the limits came from: default, auto or an operator override
    reason: str = ""  # why the limits are what they are (the command's reason)

    @property
    def blocked_ratio(self) -> float:
        return self.blocked / self.requests if self.requests else 0.0

    def line(self) -> str:
        """One line of the printed time series."""
        return (
            f"{self.t_s:6.1f} s  {self.phase:8}  site {self.requests:3d} req/s, {self.blocked:2d} blocked "
            f"({self.blocked_ratio:4.0%}), 10 s rate {self.rate_10s:5.1f}  |  "
            f"fleet P_d {self.concurrency}, delay {self.delay_ms:5d} ms ({self.source})"
        )


@dataclass
class LoopResult:
    spec: LoopSpec
    samples: list[Sample] = field(default_factory=list)

    def phase(self, phase: Phase, last_s: float | None = None) -> list[Sample]:
        """The samples of ``phase``, or only its last ``last_s`` seconds."""
        chosen = [s for s in self.samples if s.phase == phase]
        if last_s is not None and chosen:
            chosen = [s for s in chosen if s.t_s > chosen[-1].t_s - last_s]
        return chosen

    def unthrottled(self) -> list[Sample]:
        """The blocking phase up to the first command's arrival, that second included.

        A sample holds the requests of the second before it and the limits at its end, so the second
        in which the first command arrived still ran on the default limits for most of it.
        """
        blocking = self.phase("blocking")
        first = next((i for i, s in enumerate(blocking) if s.source != "default"), len(blocking) - 1)
        return blocking[: first + 1]

    def settled(self) -> list[Sample]:
        """The second half of the blocking phase: the loop's steady state, probes included."""
        return self.phase("blocking", last_s=self.spec.blocking_s / 2)

    def held(self) -> list[Sample]:
        """The blocking phase after the first ``settle_s``: where the fleet should hold near R."""
        return [s for s in self.phase("blocking") if s.t_s > self.spec.settle_s]

    def recovered_s(self) -> float | None:
        """Seconds from the site relaxing to the fleet back at its configured P_d and delay."""
        relaxed = self.phase("relaxed")
        back = (self.spec.ceiling, self.spec.delay_ms)
        return next((round(s.t_s - self.spec.blocking_s, 1) for s in relaxed
                     if (s.concurrency, s.delay_ms) == back), None)  # fmt: skip

    def pages_s(self, pages: int = 500) -> float | None:
        """Seconds from the start to the ``pages``-th page the site served (not blocked)."""
        served = 0
        for sample in self.samples:
            served += sample.requests - sample.blocked
            if served >= pages:
                return sample.t_s
        return None

    def until_pages(self, pages: int = 500) -> list[Sample]:
        """The samples up to the ``pages``-th page served (all of them if it never came)."""
        end = self.pages_s(pages)
        return [s for s in self.samples if end is None or s.t_s <= end]

    def summary(self) -> dict[str, Any]:
        """Figures the test checks and the benchmark prints."""
        blocking, relaxed = self.phase("blocking"), self.phase("relaxed")
        crawl = self.until_pages()
        crawl_requests = sum(s.requests for s in crawl)
        settled = self.settled()
        settled_requests = sum(s.requests for s in settled)
        held = self.held()
        held_requests = sum(s.requests for s in held)
        return {
            "settings": self.spec.label,
            "mode": self.spec.mode if self.spec.mode == "captcha" or self.spec.retry_after_s else "429 no RA",
            "pages_500_s": self.pages_s(),
            "crawl_requests": crawl_requests,
            "crawl_blocked": sum(s.blocked for s in crawl),
            "crawl_blocked_ratio": round(sum(s.blocked for s in crawl) / max(1, crawl_requests), 4),
            # Seconds of the held phase in which the site saw more than its limit (it blocked).
            "held_over_s": sum(1 for s in self.held() if s.blocked),
            "held_rate": round(held_requests / max(1, len(held)), 2),
            "held_fraction_of_limit": round(held_requests / max(1, len(held)) / self.spec.max_rps, 3),
            "held_blocked": sum(s.blocked for s in held),
            "held_requests": held_requests,
            "held_blocked_ratio": round(sum(s.blocked for s in held) / max(1, held_requests), 4),
            "recovered_s": self.recovered_s(),
            "max_rps": self.spec.max_rps,
            "threshold": self.spec.threshold,
            "first_rate_1s": blocking[0].requests if blocking else 0,
            "peak_rate_1s": max((s.requests for s in blocking), default=0),
            "settled_rate": round(settled_requests / max(1, len(settled)), 2),
            "settled_blocked_ratio": round(sum(s.blocked for s in settled) / max(1, settled_requests), 4),
            "min_concurrency": min((s.concurrency for s in blocking), default=self.spec.ceiling),
            "first_throttled_s": next((s.t_s for s in blocking if s.source != "default"), None),
            "unthrottled_blocked": sum(s.blocked for s in self.unthrottled()),
            "end_concurrency": relaxed[-1].concurrency if relaxed else None,
            "end_delay_ms": relaxed[-1].delay_ms if relaxed else None,
        }

    def rows(self) -> list[dict[str, Any]]:
        return [{**asdict(s), "blocked_ratio": round(s.blocked_ratio, 3)} for s in self.samples]


def loop_settings(settings: Settings, spec: LoopSpec, work_dir: Path) -> Settings:
    """Private names, loopback opened for the site, and the spec's starting limits."""
    private = private_namespace(settings, f"antibot-{uuid.uuid4().hex[:8]}", work_dir / "frontier")
    return private.model_copy(
        update={
            "limits": LimitSettings(
                domain_concurrency=spec.ceiling, domain_delay_ms=spec.delay_ms, fetch_concurrency=16
            ),
            "fetch": FetchSettings(
                allow_hosts="127.0.0.1", permit_wait_s=0.5, delay_jitter=spec.delay_jitter
            ),
            "stack": settings.stack.model_copy(update={"data_dir": work_dir / "stack"}),
            # The frontier admits k x P_d tasks per domain, and a task waiting in a retry tier (2 min
            # after a captcha) still counts: at P_d 1 eight blocked tasks stalled the domain for two
            # minutes. The throttle holds P_d low and spaces requests by delay instead, so the loop
            # gives each slot more room; the frontier should size this by rate (noted in docs).
            "frontier": private.frontier.model_copy(update={"outstanding_per_slot": 32}),
            # The snapshot tells when the processor is up (run_loop waits for it, see there).
            "throttle": spec.throttle(settings.throttle).model_copy(
                update={"snapshot_path": str(work_dir / "throttle-snapshot.json")}
            ),
        }
    )


def run_loop(
    settings: Settings,
    spec: LoopSpec,
    work_dir: Path,
    on_sample: Callable[[Sample], None] | None = None,
) -> LoopResult:
    """Crawl a protected host through a blocking phase and a relaxed one; sample every second.

    ``settings`` should come from :func:`loop_settings`.
    """
    anti_bot = AntiBot(max_rps=spec.max_rps, mode=spec.mode, retry_after_s=spec.retry_after_s)
    site_spec = SiteSpec(seed=29, hosts=1, pages_per_host=spec.site_pages, latency_ms=20, anti_bot=anti_bot)
    result = LoopResult(spec)
    prepare_data_plane(settings)
    with SampleSite(site_spec) as site, ServiceGroup.build(settings, SERVICES):
        domain = domain_of(site.seeds[0])
        view = ThrottleView(settings).start()
        try:
            wait_for_processor(settings)
            last = site.stats().hosts[0]
            started = time.monotonic()  # t = 0: the job is submitted, the first burst comes at once
            # Seeds are confirmed one by one (seconds for thousands): sample meanwhile, from t = 0.
            submitter = threading.Thread(target=_submit, args=(settings, site), daemon=True)
            submitter.start()
            phase: Phase = "blocking"
            while (elapsed := time.monotonic() - started) < spec.blocking_s + spec.relaxed_s:
                if phase == "blocking" and elapsed >= spec.blocking_s:
                    site.set_anti_bot(0, None)
                    phase = "relaxed"
                time.sleep(max(0.0, round(elapsed) + 1 - elapsed))
                host = site.stats().hosts[0]
                limits = view.details(domain)
                sample = Sample(
                    t_s=round(time.monotonic() - started, 1),
                    phase=phase,
                    requests=host.total_requests - last.total_requests,
                    blocked=_blocked(host) - _blocked(last),
                    rate_10s=round(host.rate_10s, 2),
                    concurrency=limits.concurrency,
                    delay_ms=limits.delay_ms,
                    source=limits.source,
                    reason=limits.reason,
                )
                last = host
                result.samples.append(sample)
                if on_sample is not None:
                    on_sample(sample)
            submitter.join(timeout=60)
        finally:
            view.close()
    return result


def wait_for_processor(settings: Settings, timeout_s: float = 120.0) -> None:
    """Until the processor has its partitions and tables: a deployment runs it before any crawl,
    and a processor still starting (5-15 s on a loaded machine) left the fresh domain's first
    bursts unjudged, which is not the loop being measured."""
    path = settings.throttle_snapshot_path
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            snapshot = read_snapshot(path) if path is not None else {}
        except ThrottleError:
            snapshot = {}  # not written yet
        if snapshot.get("ready") and snapshot.get("partitions"):
            return
        time.sleep(0.5)
    raise TimeoutError(f"the throttle processor was not ready within {timeout_s:.0f} s ({path})")


def _submit(settings: Settings, site: SampleSite) -> None:
    """Every page of the host as a seed: the loop needs steady demand, not link discovery."""
    urls = sorted(site.reachable_urls())
    JobClient(settings).crawl(urls, job_id=f"antibot-{uuid.uuid4().hex[:6]}", scope_urls=site.seeds)


def _blocked(host: Any) -> int:
    return int(host.by_status.get("429", 0)) + int(host.challenges)
