"""Cancels told to every running fetcher at once, and answered: what ``job cancel --wait`` waits for.

A cancel reaches the frontier shards (:class:`~brokers.amqp.messages.JobCancel` on the discovery
exchange) and, through their progress snapshots, every fetcher within a second or so. A fetcher that
learns it late may start a few more fetches of the job meanwhile. So the waiting side also broadcasts
the cancel on ``<tasks>.control`` (fanout), where every fetcher listens on an exclusive queue of its
own (:func:`listen`); a fetcher drops the job's tasks it holds and answers (:func:`answer`) once none
of the job's fetches runs on it any more. :func:`confirm_cancel` broadcasts until every consumer of
the task lanes (every running fetcher) has answered: from then on no fetcher starts a fetch of the
job. A fetcher that dies meanwhile leaves the lanes' consumers, so it is not waited for; one that
starts later reads the cancel from the progress snapshots before it takes any task.

``job pause --wait`` goes the same way with a :class:`~brokers.amqp.messages.JobPause`
(:func:`confirm`); ``job resume`` broadcasts its ``JobPause(paused=False)`` once (:func:`broadcast`),
unanswered: a fetcher that misses it learns it from the snapshots.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable

import pika
from pika.adapters.blocking_connection import BlockingChannel

from dualplane.brokers.amqp.exceptions import MessageRejected
from dualplane.brokers.amqp.lanes import PRIORITIES
from dualplane.brokers.amqp.messages import JobCancel, JobPause, decode
from dualplane.brokers.amqp.topology import Topology

log = logging.getLogger(__name__)

REBROADCAST_S = 1.0  # a fetcher that connected after the last broadcast hears the next one

Control = JobCancel | JobPause


def listen(
    channel: BlockingChannel, topology: Topology, on_control: Callable[[Control, str, str], None]
) -> str:
    """Listen for broadcast cancels and pauses on an exclusive queue of this connection;
    ``on_control`` gets each with its ``reply_to`` and ``correlation_id`` (for :func:`answer`).
    Returns the queue."""
    queue = channel.queue_declare("", exclusive=True, auto_delete=True).method.queue
    channel.queue_bind(queue, topology.fetch_control_exchange)

    def on_message(
        _channel: BlockingChannel, _method: object, properties: pika.BasicProperties, body: bytes
    ) -> None:
        try:
            control = decode(body, (JobCancel, JobPause))
        except MessageRejected as rejected:  # not ours to act on; the fetcher must not reconnect over it
            log.warning("ignoring a message on %s: %s", topology.fetch_control_exchange, rejected.reason)
            return
        on_control(control, properties.reply_to or "", properties.correlation_id or "")

    channel.basic_consume(queue, on_message, auto_ack=True)  # a lost cancel is broadcast again
    return str(queue)


def answer(
    channel: BlockingChannel, reply_to: str, correlation_id: str, fetcher_id: str, job_id: str
) -> None:
    """Tell the waiting side that ``fetcher_id`` starts no fetch of ``job_id`` any more (now)."""
    if not reply_to:
        return
    body = json.dumps({"fetcher": fetcher_id, "job_id": job_id}).encode()
    properties = pika.BasicProperties(correlation_id=correlation_id, content_type="application/json")
    channel.basic_publish("", reply_to, body, properties=properties)  # not mandatory: the waiter may be gone


def fetchers_running(channel: BlockingChannel, topology: Topology) -> int:
    """How many fetchers consume the task lanes now (each consumes every lane)."""
    counts = [
        channel.queue_declare(topology.lane_queue(priority), passive=True).method.consumer_count
        for priority in PRIORITIES
    ]
    return int(max(counts))


def broadcast(channel: BlockingChannel, topology: Topology, control: Control) -> None:
    """Tell every running fetcher ``control`` once on ``channel``, expecting no answer."""
    properties = pika.BasicProperties(type=control.kind)
    channel.basic_publish(topology.fetch_control_exchange, "", control.encode(), properties=properties)


def confirm_cancel(
    connection: pika.BlockingConnection, topology: Topology, job_id: str, timeout_s: float
) -> tuple[int, int]:
    """Broadcast ``job_id``'s cancel until every running fetcher answered it, or ``timeout_s`` passed.

    Returns (fetchers that answered, fetchers running at the last look): equal when confirmed."""
    return confirm(connection, topology, JobCancel(job_id=job_id), timeout_s)


def confirm(
    connection: pika.BlockingConnection, topology: Topology, control: Control, timeout_s: float
) -> tuple[int, int]:
    """Broadcast ``control`` until every running fetcher answered it, or ``timeout_s`` passed: each
    answers once no fetch of the job runs on it. (answered, running at the last look), as
    :func:`confirm_cancel`."""
    channel = connection.channel()
    replies = channel.queue_declare("", exclusive=True, auto_delete=True).method.queue
    correlation = uuid.uuid4().hex
    answered: set[str] = set()

    def on_reply(
        _channel: BlockingChannel, _method: object, properties: pika.BasicProperties, body: bytes
    ) -> None:
        if properties.correlation_id == correlation:
            answered.add(str(json.loads(body).get("fetcher", "")))

    channel.basic_consume(replies, on_reply, auto_ack=True)
    properties = pika.BasicProperties(reply_to=replies, correlation_id=correlation, type=control.kind)
    deadline = time.monotonic() + timeout_s
    running = fetchers_running(channel, topology)
    while True:
        body = control.encode()
        channel.basic_publish(topology.fetch_control_exchange, "", body, properties=properties)
        until = min(deadline, time.monotonic() + REBROADCAST_S)
        while time.monotonic() < until and len(answered) < running:
            connection.process_data_events(time_limit=0.1)
            running = fetchers_running(channel, topology)
        if len(answered) >= running or time.monotonic() >= deadline:
            return len(answered), running
