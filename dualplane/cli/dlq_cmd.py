"""``dualplane dlq list | show | redrive``: dead letters of both planes, and sending fixed ones back.

RabbitMQ's (tasks and discovered URLs that failed) are redriven to where they failed; Kafka's (pages the
extractor or the S3 sink could not handle) are re-extracted from ``pages.raw`` by ``replay`` at the
offset each names, which ``dlq show`` prints.
"""

from __future__ import annotations

import itertools
from typing import Annotated, Any, Literal

import typer

from dualplane.brokers import amqp
from dualplane.brokers.amqp.dead_letters import DeadLetter, list_dead_letters, redrive
from dualplane.brokers.amqp.publisher import confirmed_channel
from dualplane.brokers.amqp.topology import Topology
from dualplane.brokers.kafka.dead_letters import KafkaDeadLetter, read_dead_letters
from dualplane.cli import values
from dualplane.cli.namespace import NamespaceOption, settings_in
from dualplane.cli.output import JsonOption, print_json, stdout, table
from dualplane.core.exceptions import DualplaneError
from dualplane.core.settings import Settings
from dualplane.schemas import latest_version
from dualplane.schemas.serde import install

app = typer.Typer(help="Dead letters: messages that could not be handled, with the reason.")


Kind = Literal["all", "rabbitmq", "kafka"]
KindOption = Annotated[
    str,
    typer.Option(
        "--kind", help="rabbitmq (control plane: tasks, discovery), kafka (extractor, S3 sink) or all."
    ),
]
JobFilter = Annotated[
    str | None, typer.Option("--job", parser=values.non_empty, help="Only this job's dead letters.")
]
ReasonFilter = Annotated[
    str | None, typer.Option(parser=values.non_empty, help="Only those whose reason contains this text.")
]
UrlFilter = Annotated[
    str | None, typer.Option("--url", parser=values.non_empty, help="Only those of this page's URL.")
]


@app.command("list")
def list_(
    limit: Annotated[int, typer.Option(min=1, help="Show at most this many of each kind.")] = 100,
    kind: KindOption = "all",
    job: JobFilter = None,
    reason: ReasonFilter = None,
    url: UrlFilter = None,
    as_json: JsonOption = False,
    namespace: NamespaceOption = None,
) -> None:
    """Show dead letters of both planes (oldest first), without removing them: RabbitMQ's (tasks and
    discovered URLs that failed) and Kafka's (pages the extractor or the S3 sink could not handle)."""
    settings = settings_in(namespace)
    letters = _letters(settings, _kind(kind), limit)
    letters = [
        letter for letter in letters
        if (job is None or letter["job_id"] == job) and (reason is None or reason in letter["reason"])
        and (url is None or letter["url"] == url)
    ]  # fmt: skip
    if as_json:
        print_json(letters)
        return
    rows = [
        [d["id"], d["failed_at"], d["stage"], d["job_id"] or "", d["source"], d["reason"]] for d in letters
    ]
    columns = ["id", "failed at", "stage", "job", "from", "reason"]
    stdout.print(table(f"{len(letters)} dead letter(s)", columns, rows))


@app.command("show")
def show(
    letter_id: Annotated[
        str, typer.Argument(metavar="ID", help="As `dlq list` shows it: amqp:N or kafka:P:O.")
    ],
    as_json: JsonOption = False,
    namespace: NamespaceOption = None,
) -> None:
    """One dead letter in full: where it came from, why it failed, and how to send it back."""
    settings = settings_in(namespace)
    kind: Kind = "kafka" if letter_id.startswith("kafka:") else "rabbitmq"
    found = [letter for letter in _letters(settings, kind, 10_000) if letter["id"] == letter_id]
    if not found:
        raise DualplaneError(f"no dead letter {letter_id!r}; `dualplane dlq list` shows their ids")
    (letter,) = found
    if as_json:
        print_json(letter)
        return
    stdout.print(
        table(f"dead letter {letter_id}", ["field", "value"], [[k, str(v)] for k, v in letter.items()])
    )


def _kind(text: str) -> Kind:
    if text not in ("all", "rabbitmq", "kafka"):
        raise typer.BadParameter(f"{text!r}: choose all, rabbitmq or kafka", param_hint="--kind")
    return text  # type: ignore[return-value]


def _letters(settings: Settings, kind: Kind, limit: int) -> list[dict[str, Any]]:
    """Both kinds as one shape: id, failed_at, stage, job_id, url, source, reason, and how to redrive."""
    letters: list[dict[str, Any]] = []
    if kind in ("all", "rabbitmq"):
        connection = amqp.connect(settings.amqp)
        try:
            channel = connection.channel()
            Topology(settings.queues).declare(channel)
            found = list_dead_letters(channel, Topology(settings.queues), limit)
        finally:
            connection.close()
        letters += [_amqp_entry(index, letter) for index, letter in enumerate(found, 1)]
    if kind in ("all", "kafka"):
        codec = install(settings)
        found_kafka = itertools.islice(
            read_dead_letters(settings.kafka, settings.topics.dead_letters, codec), limit
        )
        letters += [_kafka_entry(letter) for letter in found_kafka]
    return letters


def _amqp_entry(index: int, letter: DeadLetter) -> dict[str, Any]:
    return {
        "id": f"amqp:{index}", "failed_at": letter.failed_at, "stage": letter.kind or "control plane",
        "job_id": letter.job_id, "url": letter.url, "source": letter.source_queue, "reason": letter.reason,
        "redrive": "dualplane dlq redrive" + (f" --job {letter.job_id}" if letter.job_id else ""),
        "body_preview": letter.body_preview,
        # The fields `dlq list --json` had before Kafka's letters joined it: scripts read them.
        "kind": letter.kind, "source_queue": letter.source_queue,
    }  # fmt: skip


def _kafka_entry(letter: KafkaDeadLetter) -> dict[str, Any]:
    where = f"{letter.source_topic}[{letter.source_partition}]@{letter.source_offset}"
    return {
        "id": letter.id, "failed_at": letter.failed_at, "stage": letter.stage, "job_id": letter.job_id,
        "url": letter.key, "source": where, "reason": letter.reason,
        # Re-extract the one raw page it names, once the cause is fixed (to-offset is exclusive).
        "redrive": f"dualplane replay --from-offset {letter.source_partition}:{letter.source_offset} "
        f"--to-offset {letter.source_partition}:{letter.source_offset + 1} "
        f"--schema-version {latest_version('page_record')}",
    }  # fmt: skip


@app.command("redrive")
def redrive_(
    job: Annotated[
        str | None, typer.Option("--job", parser=values.non_empty, help="Only this job's dead letters.")
    ] = None,
    reason: Annotated[
        str | None, typer.Option(parser=values.non_empty, help="Only those whose reason contains this text.")
    ] = None,
    as_json: JsonOption = False,
    namespace: NamespaceOption = None,
) -> None:
    """Send dead letters back to where they failed (after you fixed the cause)."""
    settings = settings_in(namespace)

    def matches(letter: DeadLetter) -> bool:
        return (job is None or letter.job_id == job) and (reason is None or reason in letter.reason)

    connection = amqp.connect(settings.amqp)
    try:
        channel = confirmed_channel(connection)
        Topology(settings.queues).declare(channel)
        redriven, left = redrive(channel, Topology(settings.queues), matches)
    finally:
        connection.close()
    if as_json:
        print_json({"redriven": redriven, "left": left})
    else:
        stdout.print(f"redriven {redriven}, left {left} in the dead-letter queue")
