"""The walk over a RabbitMQ cluster's nodes: which to try first, and a name lookup that fails fast.

pika can walk a list of connection parameters itself, but a name that does not resolve ends its
pass (pika 1.3 and 1.4: ``AMQPConnectionWorkflow._on_getaddrinfo_async_done`` starts the next cycle
from the first entry, and the last cycle raises the bare ``socket.gaierror``). With the first node of
a cluster removed for good, every reconnect tried that name alone and never reached the survivors;
and on a compose network a removed container's name took the resolver 12 s to give up. So the walk
is ours: each node once per pass, its name looked up with a short bound first, the node that
answered last tried first, and pika asked for one node at a time.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Sequence

# A live name resolves in milliseconds (Docker's embedded DNS, /etc/hosts); a lost node's name can
# hang for the resolver's whole timeout. Long enough for a loaded machine, short beside a reconnect.
RESOLVE_TIMEOUT_S = 2.0

_lock = threading.Lock()
_last_good: dict[tuple[str, ...], str] = {}


def in_order(cluster: Sequence[str]) -> list[str]:
    """``cluster``'s nodes (``host:port`` names), the one that answered last first, then the rest in
    their configured order: a service that moved to a survivor goes back to it, not to the lost node."""
    with _lock:
        good = _last_good.get(tuple(cluster))
    if good is None or good not in cluster:
        return list(cluster)
    return [good, *(node for node in cluster if node != good)]


def remember(cluster: Sequence[str], node: str) -> None:
    """``node`` answered: try it first next time (per process, per configured list)."""
    with _lock:
        _last_good[tuple(cluster)] = node


def unresolved(host: str, port: int, timeout_s: float = RESOLVE_TIMEOUT_S) -> str | None:
    """None when ``host`` resolves within ``timeout_s``, else why not (in words, for the error).

    ``getaddrinfo`` takes no timeout, so it runs on a daemon thread that is left to finish alone
    when the bound passes: a hung lookup costs that thread, never the caller's reconnect.
    """
    outcome: list[OSError | None] = []
    done = threading.Event()

    def lookup() -> None:
        try:
            socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as error:
            outcome.append(error)
        else:
            outcome.append(None)
        done.set()

    threading.Thread(target=lookup, name=f"resolve {host}", daemon=True).start()
    if not done.wait(timeout_s):
        return f"{host} did not resolve within {timeout_s:g} s"
    error = outcome[0]
    return None if error is None else f"{host} does not resolve ({error})"
