"""Quorum queues short of members: what ``dualplane status`` checks after a RabbitMQ node is lost.

The management API lists, per quorum queue, its ``members`` (the nodes holding a copy) and which of
them are ``online``, and the cluster's nodes (a node that left for good stays listed, not running,
until ``rabbitmqctl forget_cluster_node``). A queue is short when fewer members are online than it
should have: ``DUALPLANE_QUEUE_QUORUM_MEMBERS`` (0: one per node, RabbitMQ's default) capped at
the number of nodes. On a single node that is one, which its queues have.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dualplane.brokers.amqp.management import get, queues
from dualplane.core.settings import AmqpSettings


@dataclass
class QuorumReplication:
    """The cluster's nodes and the quorum queues short of members, as JSON-ready data."""

    nodes: int
    running: int
    wanted: int
    short: dict[str, dict[str, int]] = field(default_factory=dict)  # queue -> members, online

    def alarms(self, shown: int = 8) -> list[str]:
        lines = []
        if self.running < self.nodes:
            lines.append(f"RabbitMQ: {self.nodes - self.running} of {self.nodes} nodes not running")
        for name, counts in sorted(self.short.items())[:shown]:
            lines.append(
                f"RabbitMQ quorum queue {name}: {counts['online']} of {self.wanted} members online "
                f"({counts['members']} members)"
            )
        if len(self.short) > shown:
            lines.append(f"RabbitMQ: {len(self.short) - shown} more quorum queues short of members")
        return lines

    def as_dict(self) -> dict[str, Any]:
        return {
            "nodes": self.nodes,
            "running": self.running,
            "wanted_members": self.wanted,
            "short": self.short,
        }


def quorum_replication(amqp: AmqpSettings, quorum_members: int) -> QuorumReplication:
    """The findings for every quorum queue of the URL's vhost."""
    nodes = get(amqp, "/api/nodes")
    running = sum(1 for node in nodes if node.get("running"))
    wanted = min(quorum_members or len(nodes), len(nodes))
    report = QuorumReplication(nodes=len(nodes), running=running, wanted=wanted)
    for queue in queues(amqp):
        if queue.get("type") != "quorum":
            continue
        members, online = queue.get("members") or [], queue.get("online") or []
        if len(online) < wanted:
            report.short[str(queue["name"])] = {"members": len(members), "online": len(online)}
    return report
