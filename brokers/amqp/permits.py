"""Fleet-wide per-domain concurrency: a semaphore made of RabbitMQ messages.

Why this mechanism. The limit P_d must hold across every fetcher process, and a crashed fetcher
must give its share back by itself. The options were:

- *per-domain queues with a single active consumer*: exact, but one subscription per domain per
  fetcher, and all domains pile onto whichever fetcher subscribed first;
- *consistent hashing of domains to fetchers*: balanced, but a dead fetcher's queue strands its
  tasks until someone notices, and rebalancing moves in-flight work;
- *leases* in a shared store: needs a store we do not otherwise run, and lease expiry to tune.

We use permits: each domain has a small durable queue ``<permits>.<domain>`` holding P_d permit
messages, created and sized by the frontier. Before a request a fetcher takes one with
``basic.get`` and keeps it unacked; after the request plus the politeness delay (with jitter,
never strictly periodic) it rejects it with ``requeue=True``, which puts it back. No fetcher can
hold a permit that is not in the queue, so at most P_d requests run at once per domain, however
many fetchers there are; and when a fetcher dies its channel closes and the broker returns its
permits at once. Costs: one ``basic.get`` per request, and a domain with no free permit defers
its task briefly (see ``control_plane.fetcher.runner``).

Permit queues expire after ``IDLE_EXPIRY_MS`` unused; the frontier re-creates them (and refills
them) when a domain becomes active again after more than ``REFILL_AFTER_S``, long after any
permit could still be held.

Changing P_d while permits are held (throttle commands). Raising it is easy: publish more permits.
Lowering it cannot take back permits that fetchers hold (they are unacked on the fetchers'
channels), so the frontier destroys what is free now (:func:`remove`) and records the rest as the
domain's *debt*: permits that still exist beyond P_d. On later ticks it destroys free permits
again, up to the debt, as holders give them back, until the debt is paid. A raise first cancels
debt, then adds permits. :class:`PermitLedger` is that bookkeeping, pure; :func:`resize` applies
it. Until the debt is paid the fleet may briefly run more than the new P_d; every fetcher also
caps its own in-flight requests per domain at the new P_d the moment the command reaches it, so
the overshoot is bounded by the requests already running when the command was issued.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass

from pika.adapters.blocking_connection import BlockingChannel
from pika.exceptions import ChannelClosedByBroker

from dualplane.brokers.amqp.publisher import publish
from dualplane.brokers.amqp.topology import Topology

log = logging.getLogger(__name__)

IDLE_EXPIRY_MS = 7 * 86_400_000
REFILL_AFTER_S = 6 * 86_400.0  # well inside the expiry, well beyond any permit hold
REFRESH_AFTER_S = 86_400.0  # re-declare once a day so an active queue never expires
# A fetcher found a domain's permit queue gone although the frontier issued its task (deleted by
# hand, or the broker's state lost while the frontier's disk was kept): it reports its task with this
# outcome and sends it round the shortest delay tier, and the frontier declares and fills the queue.
MISSING = "permit_queue_missing"


@dataclass(frozen=True)
class Permit:
    """A held permit: release it (or let the channel close) to give it back."""

    domain: str
    delivery_tag: int


@dataclass(frozen=True)
class PermitLedger:
    """What the frontier knows of a domain's permits: ``target`` (P_d) and ``debt``, the permits
    that still exist beyond it and are to be destroyed as they come back free."""

    target: int
    debt: int = 0

    @property
    def existing(self) -> int:
        """Permits in circulation, free or held."""
        return self.target + self.debt

    def retarget(self, target: int) -> tuple[PermitLedger, int]:
        """Move to ``target``: the new ledger and how many permits to add now (0 when lowering,
        which instead raises the debt; pay it with :meth:`paid` after :func:`remove`)."""
        if target < 0:
            raise ValueError(f"a permit target must be >= 0, got {target}")
        if target >= self.existing:
            return PermitLedger(target, 0), target - self.existing
        return PermitLedger(target, self.existing - target), 0

    def paid(self, destroyed: int) -> PermitLedger:
        """After ``destroyed`` permits were removed toward the debt."""
        if not 0 <= destroyed <= self.debt:
            raise ValueError(f"destroyed {destroyed} permits against a debt of {self.debt}")
        return PermitLedger(self.target, self.debt - destroyed)


def resize(
    channel: BlockingChannel, topology: Topology, domain: str, ledger: PermitLedger, target: int
) -> PermitLedger:
    """Bring the domain's permits toward ``target`` (also pays debt when ``target`` is unchanged).

    The queue must exist (the frontier declared it). Returns the new ledger, which the caller
    must record: permits added or destroyed here cannot be undone.
    """
    ledger, to_add = ledger.retarget(target)
    if to_add:
        add(channel, topology, domain, to_add)
    if ledger.debt:
        ledger = ledger.paid(remove(channel, topology, domain, ledger.debt))
    return ledger


def declare(channel: BlockingChannel, topology: Topology, domain: str) -> str:
    queue = topology.permits_queue(domain)
    arguments: dict[str, object] = {"x-expires": IDLE_EXPIRY_MS}
    members = topology.queues.quorum_members
    if members:
        # In a cluster (quorum members set) a classic queue lives on one node, and when that node is
        # lost for good the queue can be neither used nor declared again until it is forgotten: the
        # domain's crawl stalled. A quorum queue keeps the permits on the nodes that survive.
        arguments.update({"x-queue-type": "quorum", "x-quorum-initial-group-size": members})
    channel.queue_declare(queue, durable=True, arguments=arguments)
    return queue


def exists(probe: BlockingChannel, topology: Topology, domain: str) -> tuple[bool, BlockingChannel]:
    """Whether ``domain``'s permit queue exists, asked on ``probe`` (a passive declare), and the
    channel to probe on next: a missing queue closes the probe channel (404), so a new one is opened."""
    try:
        probe.queue_declare(topology.permits_queue(domain), passive=True)
    except ChannelClosedByBroker as closed:
        if closed.reply_code != 404:
            raise
        return False, probe.connection.channel()
    return True, probe


def refill(channel: BlockingChannel, topology: Topology, domain: str, count: int) -> None:
    """Re-create the domain's permit queue with exactly ``count`` permits.

    Only safe when no permit of the domain can be held: the frontier calls it for a domain it
    has never seen or that was idle longer than ``REFILL_AFTER_S``.
    """
    queue = topology.permits_queue(domain)
    channel.queue_delete(queue)
    declare(channel, topology, domain)
    add(channel, topology, domain, count)
    log.info("permits for %s: %d", domain, count)


def add(channel: BlockingChannel, topology: Topology, domain: str, count: int) -> None:
    body = json.dumps({"domain": domain, "issued_at": time.time()}).encode()
    for _ in range(count):
        publish(channel, "", topology.permits_queue(domain), body)


def remove(channel: BlockingChannel, topology: Topology, domain: str, count: int) -> int:
    """Destroy up to ``count`` free permits (to lower P_d); returns how many were free to take."""
    removed = 0
    while removed < count:
        method, _properties, _body = channel.basic_get(topology.permits_queue(domain), auto_ack=True)
        if method is None:
            break
        removed += 1
    return removed


def try_acquire(channel: BlockingChannel, topology: Topology, domain: str) -> Permit | None:
    """Take a free permit of ``domain`` without waiting, or None when all are held."""
    method, _properties, _body = channel.basic_get(topology.permits_queue(domain), auto_ack=False)
    if method is None:
        return None
    return Permit(domain, method.delivery_tag)


def release(channel: BlockingChannel, permit: Permit) -> None:
    """Give the permit back to its queue for the next request to the domain."""
    channel.basic_reject(permit.delivery_tag, requeue=True)


class PermitQueues:
    """Which domains have a permit queue, as a fetcher must know before it takes a permit.

    ``basic.get`` on a missing queue closes its channel (404), and a fetcher's permit channel holds
    the permits of every task it runs: closing it gives them all back at once, and their later
    releases fail. So a domain is checked once, by a passive declare on a probe channel of its
    own, before its first permit is taken; a missing queue closes only the probe channel.
    """

    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        self.channel: BlockingChannel | None = None
        self.known: set[str] = set()

    def reset(self, channel: BlockingChannel) -> None:
        """A new connection: probe on ``channel``, forget what was known (queues may have gone)."""
        self.channel = channel
        self.known.clear()

    def exists(self, domain: str) -> bool:
        """True if ``domain``'s permit queue exists (a missing one is asked again next time)."""
        if domain in self.known:
            return True
        assert self.channel is not None
        found, self.channel = exists(self.channel, self.topology, domain)
        if found:
            self.known.add(domain)
        return found
