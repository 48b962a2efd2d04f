"""Each domain's permit queue, kept at the domain's current P_d by the shard that owns the domain.

A domain's permits (:mod:`brokers.amqp.permits`) are made when its first task is issued,
sized from the throttle's current concurrency (a throttled new domain starts throttled), and
resized fleet-wide when a command (or an override expiring) changes it: raised at once, lowered
by destroying free permits and paying the rest back as held ones return (the debt).

Permits are published on a channel of their own, not in the frontier's transaction: a permit queue
must never be recorded as filled unless its permits really exist, and refilling one is idempotent
(delete, declare, fill), so doing it again after a crash is harmless. That channel is transactional
too, committed after each domain's fill or resize: ``tx.commit-ok`` says the broker has all of the
domain's permits in one round trip (a confirm each cost a round trip a permit, 16 for every new
domain, and was a sixth of the frontier's time when it met many new sites).
"""

from __future__ import annotations

import logging
import threading
import time

from pika.adapters.blocking_connection import BlockingChannel

from dualplane.brokers.amqp import permits
from dualplane.brokers.amqp.topology import Topology
from dualplane.control_plane.frontier.store import FrontierState
from dualplane.core.limits import Limits, LimitsSource

log = logging.getLogger(__name__)


class DomainPermits:
    """Declares, fills and resizes the permit queues of one shard's domains."""

    def __init__(self, state: FrontierState, topology: Topology, view: LimitsSource) -> None:
        self.state = state
        self.topology = topology
        self.view = view
        self.channel: BlockingChannel | None = None  # in tx mode, set on every (re)connect
        self.probe: BlockingChannel | None = None  # for passive declares (a 404 closes it), likewise
        self._changed_lock = threading.Lock()
        self._changed: set[str] = set()  # domains whose limits changed, from the view's thread
        view.subscribe(self.on_limits_changed)

    def ensure(self, domain: str) -> None:
        """Make sure ``domain`` has a live permit queue before one of its tasks is issued."""
        channel = self._channel()
        _, count, declared_at = self.state.domain(domain)
        now = time.time()
        wanted = self.view.details(domain).concurrency
        if declared_at is None or now - declared_at > permits.REFILL_AFTER_S:
            permits.refill(channel, self.topology, domain, wanted)
            channel.tx_commit()
            self.state.set_permits(domain, wanted, now)
            return
        if count != wanted:
            # P_d changed while no command said so: DUALPLANE_LIMIT_DOMAIN_CONCURRENCY was changed
            # and the frontier restarted (its state still holds the old size), or a throttle
            # command was missed while it was down.
            self._resize(domain)
        if now - declared_at > permits.REFRESH_AFTER_S:
            permits.declare(channel, self.topology, domain)
            ledger = self.state.permit_ledger(domain)
            self.state.set_permits(domain, ledger.target, now, ledger.debt)

    def missing(self, domain: str) -> None:
        """A fetcher found ``domain``'s permit queue gone (deleted, or the broker's state lost while
        this shard's disk was kept): declare and fill it again, unless it is back already (another
        report came first). Gone, it took every permit with it, so a full P_d is right."""
        _, _, declared_at = self.state.domain(domain)
        if declared_at is None:
            return  # never made here: its next task makes it
        assert self.probe is not None
        found, self.probe = permits.exists(self.probe, self.topology, domain)
        if found:
            return
        channel = self._channel()
        wanted = self.view.details(domain).concurrency
        permits.declare(channel, self.topology, domain)
        permits.add(channel, self.topology, domain, wanted)
        channel.tx_commit()
        self.state.set_permits(domain, wanted, time.time())
        log.warning("permit queue of %s was gone (a fetcher found it missing); declared again with %d "
                    "permits", domain, wanted)  # fmt: skip

    def on_limits_changed(self, domain: str, limits: Limits) -> None:
        """The view's callback, on its own thread: note the domain for the consumer thread."""
        with self._changed_lock:
            self._changed.add(domain)

    def obey(self, *, sweep: bool) -> bool:
        """Resize the permits of domains whose P_d changed; on a sweep, of every throttled or
        indebted domain (expired overrides and pauses, debts to pay). True if any was resized."""
        with self._changed_lock:
            domains, self._changed = self._changed, set()
        if sweep:
            domains |= self.view.domains() | set(self.state.domains_in_debt())
        resized = [self._resize(domain) for domain in sorted(domains)]  # every one, not up to the first
        return any(resized)

    def _resize(self, domain: str) -> bool:
        _, _, declared_at = self.state.domain(domain)
        if declared_at is None or time.time() - declared_at > permits.REFILL_AFTER_S:
            return False  # no live permit queue: the next task refills it from the current limits
        ledger = self.state.permit_ledger(domain)
        target = self.view.details(domain).concurrency
        if ledger.target == target and ledger.debt == 0:
            return False
        channel = self._channel()
        permits.declare(channel, self.topology, domain)  # a get or publish on a missing queue would fail
        resized = permits.resize(channel, self.topology, domain, ledger, target)
        channel.tx_commit()
        # Added or destroyed permits cannot be taken back: the ledger says so at the next commit.
        self.state.set_permit_ledger(domain, resized)
        if resized.target != ledger.target:
            log.info(
                "permits for %s: %d -> %d (%d held permits still to destroy as they return)",
                domain, ledger.target, resized.target, resized.debt,
            )  # fmt: skip
        return True

    def _channel(self) -> BlockingChannel:
        if self.channel is None or not self.channel.is_open:
            raise RuntimeError("the permit channel is closed: the frontier is reconnecting")
        return self.channel
