"""What became of a job's fetched pages: records committed, and pages that ended in a dead letter.

:class:`~control_plane.frontier.jobs.FinishRule` asks once the job is otherwise finished (idle at
the frontier, the extractor's lag 0), so that ``crawl --wait`` never calls a job whose pages all
failed extraction a success. Counted from the brokers:

- records: the job's records on the records topic, read from the job's creation on (Kafka
  timestamps; committed records only), against the pages that owe one: distinct URLs whose fetch
  event says ``ok`` (redirects handed on and 304s are fetched tasks without a record);
- extraction dead letters: the job's entries on the Kafka dead-letters topic, with their reasons;
- fetch dead letters: the job's tasks in RabbitMQ's dead-letter queue (their count is also in the
  job's progress; the queue gives the reasons), browsed without removing any.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from dualplane.brokers import amqp
from dualplane.brokers.amqp.dead_letters import list_dead_letters
from dualplane.brokers.amqp.topology import Topology
from dualplane.brokers.kafka.reader import read_to_end
from dualplane.core.settings import Settings
from dualplane.schemas.serde import install

# The fetch outcome whose page went to pages.raw with a body, so the extractor owes it a record or a
# dead letter (control_plane.fetcher.retry_policy.Outcome.OK; a 304 is handled without a record).
OK_OUTCOME = "ok"
MAX_FETCH_DEAD_LETTERS = 1000  # browsed for reasons; the count itself comes from the job's progress
REASONS_SHOWN = 3


@dataclass(frozen=True)
class JobOutcomes:
    """A job's records and extraction dead letters, and the reasons of its dead letters."""

    records: int
    extraction_dead_letters: int
    reasons: Counter[str] = field(default_factory=Counter)  # "stage: reason" -> pages
    # Pages that should have a record: distinct URLs fetched with outcome ``ok`` (a raw page went to
    # Kafka). Tasks done also count redirects the fetcher hands on and 304s, which make no record.
    # None: not counted (callers then compare with the pages fetched).
    with_body: int | None = None

    def top_reasons(self) -> str:
        """The commonest reasons, for a summary line."""
        return "; ".join(f"{count} x {reason}" for reason, count in self.reasons.most_common(REASONS_SHOWN))


def job_outcomes(settings: Settings, job_id: str, since_s: float) -> JobOutcomes:
    """Count ``job_id``'s records and dead letters written since ``since_s`` (epoch seconds)."""
    since_ms = int(since_s * 1000) - 60_000  # a minute early: clocks of other machines may lag ours
    records = sum(1 for _ in _of_job(settings, settings.topics.records, job_id, since_ms))
    reasons: Counter[str] = Counter()
    extraction = 0
    for letter in _of_job(settings, settings.topics.dead_letters, job_id, since_ms):
        extraction += 1
        reasons[f"extraction ({letter.get('stage')}): {_first_line(str(letter.get('reason')))}"] += 1
    reasons.update(_fetch_reasons(settings, job_id))
    with_body = {
        event.get("url")
        for event in _of_job(settings, settings.topics.fetch_events, job_id, since_ms)
        if event.get("outcome") == OK_OUTCOME
    }
    return JobOutcomes(records, extraction, reasons, len(with_body))


def _of_job(settings: Settings, topic: str, job_id: str, since_ms: int) -> Iterator[dict[str, Any]]:
    """The decoded values of ``topic`` since ``since_ms`` that belong to ``job_id``. A value that does
    not decode is another writer's business (the extractor dead-letters its own): skipped."""
    codec = install(settings)
    for message in read_to_end(settings.kafka, topic, since_ms=since_ms):
        try:
            record = codec.decode(message.value() or b"").record
        except Exception:  # undecodable: see above
            continue
        if record.get("job_id") == job_id:
            yield record


def _fetch_reasons(settings: Settings, job_id: str) -> Counter[str]:
    connection = amqp.connect(settings.amqp)
    try:
        letters = list_dead_letters(connection.channel(), Topology(settings.queues), MAX_FETCH_DEAD_LETTERS)
    finally:
        connection.close()
    return Counter(f"fetch: {_first_line(letter.reason)}" for letter in letters if letter.job_id == job_id)


def _first_line(reason: str) -> str:
    line = reason.strip().splitlines()[0] if reason.strip() else "no reason given"
    return line if len(line) <= 160 else f"{line[:157]}..."
