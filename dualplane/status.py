"""What ``dualplane status`` shows: jobs with rate and ETA, control queues, consumer lag, throttled domains.

One :func:`gather` call reads everything once and returns plain data (what ``--json`` prints); the
CLI draws it, again and again with ``--watch``. Each part is read on its own, so a broker that is
away costs its part (with the error) and not the whole view.

Only the queues an operator watches are listed (lanes, retry tiers, dead letters, frontier shards);
the per-domain permit queues are counted, not listed. Job progress comes from the compacted
``jobs.progress`` topic, so finished jobs leave no queue behind.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, replace
from typing import Any

from dualplane.brokers.amqp.management import queue_stats
from dualplane.brokers.amqp.replication import quorum_replication
from dualplane.brokers.amqp.topology import Topology
from dualplane.brokers.kafka.lag import consumer_lag, extractor_lag
from dualplane.brokers.kafka.replication import kafka_replication
from dualplane.connectors.sink.lag import sink_lag
from dualplane.control_plane.frontier import (
    FinishRule,
    ProgressReader,
    Verdict,
    eta_s,
    finished_count,
    remaining,
)
from dualplane.core.settings import Settings
from dualplane.data_plane.throttle import read_snapshot
from dualplane.extraction_status import extraction

MAX_THROTTLED = 20


def gather(settings: Settings, reader: ProgressReader | Exception, *, max_jobs: int = 10) -> dict[str, Any]:
    """Everything the status view shows, as JSON-ready data; ``errors`` names the parts that failed."""
    errors: dict[str, str] = {}
    lag = _part(errors, "lag", lambda: _lag(settings, reader), [])
    extractor = next((row["lag"] for row in lag if row["consumer"] == "extractor"), None)
    queues = _part(errors, "queues", lambda: _queues(settings), {"queues": [], "permit_queues": 0})
    return {
        "at": time.time(),
        "jobs": _part(errors, "jobs", lambda: _jobs(settings, reader, extractor, max_jobs), []),
        "monitors": _part(errors, "jobs", lambda: _monitors(reader), []),
        **queues,
        "lag": lag,
        "throttled": _part(errors, "throttled", lambda: _throttled(settings), []),
        "quota": _part(errors, "throttled", lambda: quota_pause(settings, time.time()), None),
        "credits": _part(errors, "throttled", lambda: credits_today(settings), None),
        "replication": _replication(settings, reader, errors),
        "extraction": _part(errors, "extraction", lambda: extraction(settings), None),
        "errors": errors,
    }


def _monitors(reader: ProgressReader | Exception) -> list[dict[str, Any]]:
    """Every monitor (shards added up): URLs due, overdue, the change rate and the share of 304s."""
    if isinstance(reader, Exception):
        raise reader
    return sorted(reader.monitors().values(), key=lambda monitor: str(monitor["monitor_id"]))


def job_row(snapshot: dict[str, Any], verdict: Verdict) -> dict[str, Any]:
    """One job's line: its counters, rate, ETA and state by :class:`FinishRule`'s ``verdict``
    (running, finished, cancelled, paused, or stalled: see :attr:`Verdict.stalled`), with the
    verdict's ``why``."""
    state = (
        "finished" if verdict.finished else "cancelled" if verdict.cancelled
        else "paused" if verdict.paused else "stalled" if verdict.stalled else "running"
    )  # fmt: skip
    return {
        "job_id": snapshot["job_id"],
        "state": state,
        "why": verdict.why,
        "done": int(snapshot.get("done", 0)),
        "failed": int(snapshot.get("failed", 0)),
        "dead_lettered": int(snapshot.get("dead_lettered", 0)),
        "queued": remaining(snapshot),
        "finished_tasks": finished_count(snapshot),
        "rate_per_s": float(snapshot.get("rate_per_s", 0.0)) if state == "running" else 0.0,
        "eta_s": {"finished": 0.0, "stalled": None, "paused": None}.get(state, eta_s(snapshot)),
        "created_at": snapshot.get("created_at"),
    }


def job_detail(
    settings: Settings, snapshot: dict[str, Any], extractor_lag: int | None, now_s: float
) -> dict[str, Any]:
    """One job's full counters (``status --job``) with its state by :class:`FinishRule`.

    The frontier's own ``idle`` (nothing queued, in flight, retrying or in the backlog) is shown as
    ``frontier_idle``: named ``idle``, it said a job was idle while the extractor was still behind
    (a probe's finding), and a job is finished only once its pages' records are committed too.
    A finished job's records and dead letters are counted, as ``crawl --wait`` counts them: ``complete``
    says whether every fetched page has its record (``why`` says how many were dead-lettered and why).
    """
    verdict = _verdict(snapshot, extractor_lag, now_s, settings)
    row = job_row(snapshot, verdict)
    counters = {key: value for key, value in snapshot.items() if key != "idle"}
    return {
        **counters,
        "state": row["state"],
        "why": row["why"],
        "complete": verdict.complete if verdict.finished else None,
        "records": verdict.records,
        "frontier_idle": bool(snapshot.get("idle")),
        "extractor_lag": extractor_lag,
    }


def _verdict(
    snapshot: dict[str, Any], lag: int | None, now_s: float, settings: Settings | None = None
) -> Verdict:
    """:class:`FinishRule`'s verdict given the extractor's ``lag`` read once for the whole view; with
    it unknown (Kafka did not answer), a job whose records count cannot be called finished. With
    ``settings`` (one job's detail), a finished job's records and dead letters are counted too."""
    if settings is not None:
        counted = FinishRule.for_view(lag, settings)
        try:
            verdict = counted.judge_at(snapshot, now_s, lag)
        except Exception:  # a broker away while counting: the uncounted verdict, as for the job list
            verdict = _verdict(snapshot, lag, now_s)
            return replace(verdict, why=f"{verdict.why} (records not counted: the brokers did not answer)")
        return _known(verdict, lag)
    verdict = FinishRule.for_view(lag).judge_at(snapshot, now_s, lag)
    return _known(verdict, lag)


def _known(verdict: Verdict, lag: int | None) -> Verdict:
    """``verdict``, unless the lag is unknown and the verdict needed it: records unknown, not finished."""
    if lag is None and verdict.records_pending is not None:
        why = "records unknown: Kafka did not give the extractor's lag"
        return Verdict(False, why, verdict.pages, stalled=verdict.stalled, paused=verdict.paused)
    return verdict


def _part(errors: dict[str, str], name: str, read: Callable[[], Any], empty: Any) -> Any:
    try:
        return read()
    except Exception as error:  # the other parts must still show when one broker is away
        errors[name] = f"{type(error).__name__}: {error}"
        return empty


def _jobs(
    settings: Settings, reader: ProgressReader | Exception, lag: int | None, max_jobs: int
) -> list[dict[str, Any]]:
    """The newest ``max_jobs`` jobs (running ones first), each finished or not by :class:`FinishRule`."""
    if isinstance(reader, Exception):
        raise reader  # Kafka did not answer when the reader was opened
    now_s = time.time()
    rows = [job_row(snapshot, _verdict(snapshot, lag, now_s)) for snapshot in reader.jobs().values()]
    rows.sort(key=lambda row: (row["state"] != "running", -float(row["created_at"] or 0)))
    return rows[:max_jobs]


def _queues(settings: Settings) -> dict[str, Any]:
    topology = Topology(settings.queues)
    watched = topology.control_queues()
    prefix = settings.queues.crawl_tasks.split(".")[0]
    stats = {queue.name: queue for queue in queue_stats(settings.amqp, prefix)}
    permits = sum(1 for name in stats if name.startswith(settings.queues.permits_prefix + "."))
    return {"queues": [asdict(stats[name]) for name in watched if name in stats], "permit_queues": permits}


def _lag(settings: Settings, reader: ProgressReader | Exception) -> list[dict[str, Any]]:
    if isinstance(reader, Exception):
        raise reader  # Kafka did not answer the reader: three more reads would each wait their timeout
    rows: list[dict[str, Any]] = [
        {"consumer": "extractor", "topic": settings.topics.pages_raw, "lag": extractor_lag(settings)}
    ]
    rows.append(
        {"consumer": "throttle", "topic": settings.topics.fetch_events,
         "lag": consumer_lag(settings.kafka, settings.throttle_app_id, settings.topics.fetch_events)}
    )  # fmt: skip
    rows += [{"consumer": "s3-sink", "topic": t, "lag": n} for t, n in sink_lag(settings).items()]
    return rows


def _replication(
    settings: Settings, reader: ProgressReader | Exception, errors: dict[str, str]
) -> dict[str, Any]:
    """Copies the brokers keep (see brokers.kafka.replication, brokers.amqp.replication): each
    broker's findings, and ``alarms``, one line per finding; none on a healthy cluster or one node."""
    view: dict[str, Any] = {"alarms": []}
    if not isinstance(reader, Exception):  # else Kafka did not answer: its part is already missing
        kafka = _part(errors, "replication", lambda: kafka_replication(settings.kafka), None)
        if kafka is not None:
            view["kafka"] = kafka.as_dict()
            view["alarms"] += kafka.alarms()
    members = settings.queues.quorum_members
    rabbitmq = _part(errors, "replication", lambda: quorum_replication(settings.amqp, members), None)
    if rabbitmq is not None:
        view["rabbitmq"] = rabbitmq.as_dict()
        view["alarms"] += rabbitmq.alarms()
    return view


def quota_pause(settings: Settings, now_s: float) -> dict[str, Any] | None:
    """The fleet-wide pause a used-up scraping-API quota started, while it lasts: its seconds left
    and the processor's reason (from the throttle's snapshot; None without a snapshot or a pause)."""
    path = settings.throttle_snapshot_path
    snapshot = read_snapshot(path) if path is not None and path.exists() else {}
    quota = snapshot.get("quota") or {}
    left_s = float(quota.get("paused_until_s") or 0) - now_s
    if left_s <= 0:
        return None
    return {"paused_for_s": round(left_s, 1), "reason": str(quota.get("reason") or "")}


def credits_today(settings: Settings) -> dict[str, Any] | None:
    """The scraping API's credits today (UTC) as the throttle counted them: used, the daily budget
    (``DUALPLANE_THROTTLE_DAILY_CREDITS``) and what is left; None when none were used and no budget is set."""
    path = settings.throttle_snapshot_path
    snapshot = read_snapshot(path) if path is not None and path.exists() else {}
    credits = snapshot.get("credits") or {}
    if not credits.get("used") and not credits.get("budget"):
        return None
    return dict(credits)


def _throttled(settings: Settings) -> list[dict[str, Any]]:
    """Domains the throttle holds below the configured P_d or above the delay, or paused."""
    path = settings.throttle_snapshot_path
    snapshot = read_snapshot(path) if path is not None and path.exists() else None
    limits = settings.limits
    rows = []
    for domain, state in (snapshot or {}).get("domains", {}).items():
        concurrency, delay_ms = int(state.get("concurrency", 0)), int(state.get("delay_ms", 0))
        if (
            concurrency < limits.domain_concurrency
            or delay_ms > limits.domain_delay_ms
            or state.get("paused")
        ):
            window = state.get("window") or {}
            rows.append({"domain": domain, "concurrency": concurrency, "delay_ms": delay_ms,
                         "paused": bool(state.get("paused")),
                         "blocked_ratio": float(window.get("blocked_ratio", 0.0))})  # fmt: skip
    rows.sort(key=lambda row: (row["concurrency"], -row["delay_ms"]))
    return rows[:MAX_THROTTLED]
