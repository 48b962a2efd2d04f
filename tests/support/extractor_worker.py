"""An extractor process that says when one of its transactions is open, and can hold it open.

Run as ``python -m tests.support.extractor_worker``; it reads its settings from the ``DUALPLANE_*``
environment like ``dualplane run extractor``. Right before a transaction commits (its records, dead
letters and handled keys produced, its offsets about to be added), it prints
``OPEN TRANSACTION <n>: <pages> pages handled so far`` on stdout. With ``HOLD_TRANSACTION=<n>`` it
then stops there, inside the open transaction, until it is killed: a test kills it exactly there,
not on a timer. Nothing else differs from the real service: the announcement rides on the bounded
call (``clients.within``) that adds the offsets to the transaction.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from confluent_kafka import Producer

from dualplane.brokers.kafka import clients
from dualplane.core.settings import Settings
from dualplane.data_plane.extractor import Extractor

HOLD_ENV = "HOLD_TRANSACTION"
T = TypeVar("T")


def main() -> None:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s")
    extractor = Extractor(Settings.from_env())
    hold = int(os.environ.get(HOLD_ENV, "0"))
    within, make_producer = clients.within, clients.producer
    opened = 0
    producers: list[Producer] = []

    def recording(*args: Any, **kwargs: Any) -> Producer:
        made = make_producer(*args, **kwargs)
        if "transactional.id" in kwargs:  # the one whose transactions the test kills inside
            producers.append(made)
        return made

    def announcing(call: Callable[[], T], timeout_s: float, what: str) -> T:
        nonlocal opened
        if what == "send_offsets":
            opened += 1
            if opened == hold:
                # The records sit in the producer's queue for up to its linger.ms: send them now, so
                # that the transaction held open really has records on the broker (not committed),
                # whatever the machine's load. A kill then must leave them invisible. Announced only
                # after the flush: announced first, the test's kill could land inside the flush (a
                # CI-like run here saw no aborted record at all).
                producers[-1].flush(60)
            print(f"OPEN TRANSACTION {opened}: {extractor.pages} pages handled so far", flush=True)
            if opened == hold:
                threading.Event().wait()  # held open until the test kills the process
        return within(call, timeout_s, what)

    clients.within = announcing
    clients.producer = recording  # type: ignore[assignment]
    signal.signal(signal.SIGTERM, lambda *_: extractor.stop())
    extractor.run()


if __name__ == "__main__":
    main()
