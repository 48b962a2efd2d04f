"""What a job report is made of, read from the brokers: the job's fetch events (``fetch.events``), its
counters (``jobs.progress``), the throttle's commands for its domains (``throttle.state``) and its
dead letters (the Kafka dead-letter topic).

Every topic is read from its beginning to its current end and filtered by job, so a report costs one
pass over ``fetch.events``: fine for the retention of a demo or a day of crawling, not a year's.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from dualplane import schemas
from dualplane.brokers.amqp.messages import visit_of
from dualplane.brokers.kafka.reader import read_to_end
from dualplane.control_plane.frontier import FinishRule, ProgressReader, Verdict
from dualplane.core.settings import Settings
from dualplane.data_plane.throttle import BadThrottleCommand, ThrottleCommand

log = logging.getLogger(__name__)


@dataclass
class JobData:
    """One job's raw material for the report."""

    job_id: str
    events: list[dict[str, Any]] = field(default_factory=list)  # fetched_at_s, domain, outcome, latency_ms…
    progress: dict[str, Any] | None = None
    commands: list[dict[str, Any]] = field(default_factory=list)  # at_s, domain, concurrency, delay_ms…
    dead_letters: list[dict[str, Any]] = field(default_factory=list)  # stage, reason
    verdict: Verdict | None = None  # finished or not, by the one rule (None: no progress known)
    monitor: dict[str, Any] | None = None  # the monitor whose visit the job is (its snapshot), if any


def read_job(settings: Settings, job_id: str) -> JobData:
    """Everything the brokers know about ``job_id`` (empty parts where they know nothing)."""
    data = JobData(job_id, events=_events(settings, job_id))
    with ProgressReader(settings) as reader:
        data.progress = reader.job(job_id)
        data.monitor = next((monitor for monitor_id, monitor in reader.monitors().items()
                             if visit_of(job_id, monitor_id) is not None), None)  # fmt: skip
    if data.progress is not None:
        data.verdict = FinishRule.from_settings(settings).judge_at(data.progress, time.time())
    domains = {event["domain"] for event in data.events}
    data.commands = _commands(settings, domains)
    data.dead_letters = _dead_letters(settings, job_id)
    return data


def _events(settings: Settings, job_id: str) -> list[dict[str, Any]]:
    events = []
    for message in read_to_end(settings.kafka, settings.topics.fetch_events):
        event = schemas.decode(message.value() or b"").record
        if event["job_id"] == job_id:
            events.append({**event, "fetched_at_s": _seconds(event["fetched_at"])})
    events.sort(key=lambda event: event["fetched_at_s"])
    return events


def _commands(settings: Settings, domains: set[str]) -> list[dict[str, Any]]:
    """Every throttle command still in the topic for these domains (compaction may have kept only the
    latest of older ones), oldest first."""
    commands = []
    for message in read_to_end(settings.kafka, settings.topics.throttle_state):
        if message.value() is None:
            continue
        try:
            command = ThrottleCommand.from_avro(message.value() or b"")
        except BadThrottleCommand as error:
            log.warning("report: skipped an unreadable throttle command: %s", error)
            continue
        if command.domain in domains:
            commands.append({**command.model_dump(), "at_s": command.issued_at.timestamp()})
    commands.sort(key=lambda command: command["at_s"])
    return commands


def _dead_letters(settings: Settings, job_id: str) -> list[dict[str, Any]]:
    letters = []
    for message in read_to_end(settings.kafka, settings.topics.dead_letters):
        letter = schemas.decode(message.value() or b"").record
        if letter.get("job_id") == job_id:
            letters.append({"stage": letter["stage"], "reason": letter["reason"]})
    return letters


def _seconds(value: datetime | int | float) -> float:
    return value.timestamp() if isinstance(value, datetime) else float(value) / 1000.0
