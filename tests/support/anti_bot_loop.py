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

from dualplane.brokers.amqp.messages import JobSpec
from dualplane.brokers.kafka.topics import prepare_data_plane
from dualplane.control_plane.frontier.client import JobClient
from dualplane.control_plane.frontier.submit import default_scope
from dualplane.core.settings import FetchSettings, LimitSettings, Settings, ThrottleSettings
from dualplane.core.web.urls import domain_of
from dualplane.data_plane.throttle.view import ThrottleView
from dualplane.namespaces import private_namespace
from dualplane.sample_site import AntiBot, SampleSite, SiteSpec
from dualplane.services import ServiceGroup

Phase = Literal["blocking", "relaxed"]
SERVICES = ("frontier", "fetcher", "throttle")


@dataclass(frozen=True)
class LoopSpec:
    """The site, the fleet's starting limits and the processor's tuning for one run of the loop.

    Small windows and short recovery so the loop plays out in about a minute and a half; the
    defaults of a real deployment (10 min windows, 1 min step) would take hours.
    """

    max_rps: float = 4.0
    mode: Literal["429", "captcha"] = "429"
    retry_after_s: int = 1
    ceiling: int = 4  # P_d before any command, and the recovery target
    delay_ms: int = 20
    blocking_s: float = 60.0
    relaxed_s: float = 50.0
    window_s: int = 6
    step_s: int = 1
    threshold: float = 0.05
    # Samples a window needs before it is judged; after each change the count starts again, so
    # this bounds how many requests a failed probe costs before it is undone.
    min_samples: int = 5
    # The spread of the fleet's hold after a request (DUALPLANE_FETCH_DELAY_JITTER). Against "at most
    # R requests in any second" a slot is safe only if its shortest hold is, so the mean rate can
    # reach at most 1 / (1 + jitter / 2) of R: 80% with the default 0.5, 91% with 0.2.
    delay_jitter: float = 0.2
    settle_s: float = 30.0  # the first seconds, where the fleet finds the limit, are not "held"

    def throttle(self, base: ThrottleSettings) -> ThrottleSettings:
        """The processor's tuning for this run (it reaches the child process through ``to_env``)."""
        return base.model_copy(
            update={
                "window_size_s": self.window_s,
                "window_step_s": self.step_s,
                "threshold": self.threshold,
                "min_samples": self.min_samples,
                "recovery_min_samples": 3,
                "recovery_s": 4.0,
                # After a captcha (no Retry-After) a fetcher leaves the site alone this long. The site
                # counts a blocked request in its 1 s window: back after 250 ms, the fleet was blocked
                # again, and each failed probe cost two blocks. 1 s, as a 429's Retry-After: 1 (the
                # production default is 2 s).
                "cooldown_base_ms": 1000,
                "cooldown_cap_ms": 2000,
                "pause_ratio": 0.98,  # this loop is about finding the limit, not pausing
                "probe_backoff_max": 2,  # probes onto the limit at most 16 s apart: quick to see it relax
                "offset_reset": "earliest",
                "snapshot_path": "",
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

    def summary(self) -> dict[str, Any]:
        """Figures the test checks and the benchmark prints."""
        blocking, relaxed = self.phase("blocking"), self.phase("relaxed")
        settled = self.settled()
        settled_requests = sum(s.requests for s in settled)
        held = self.held()
        held_requests = sum(s.requests for s in held)
        return {
            "mode": self.spec.mode,
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
            "throttle": spec.throttle(settings.throttle),
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
    site_spec = SiteSpec(seed=29, hosts=1, pages_per_host=4000, latency_ms=5, anti_bot=anti_bot)
    result = LoopResult(spec)
    prepare_data_plane(settings)
    with SampleSite(site_spec) as site, ServiceGroup.build(settings, SERVICES):
        domain = domain_of(site.seeds[0])
        view = ThrottleView(settings).start()
        try:
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


def _submit(settings: Settings, site: SampleSite) -> None:
    """Every page of the host as a seed: the loop needs steady demand, not link discovery."""
    urls = sorted(site.reachable_urls())
    spec = JobSpec(job_id=f"antibot-{uuid.uuid4().hex[:6]}", allowed_domains=default_scope(site.seeds))
    JobClient(settings).submit(spec, urls)


def _blocked(host: Any) -> int:
    return int(host.by_status.get("429", 0)) + int(host.challenges)
