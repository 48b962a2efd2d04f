"""An extractor process that says when one of its transactions is open, and can hold it open.

Run as ``python -m tests.support.extractor_worker``; it reads its settings from the ``DUALPLANE_*``
environment like ``dualplane run extractor``. Right before a transaction commits (its records, dead
letters and handled keys produced, its links about to go), it prints
``OPEN TRANSACTION <n>: <pages> pages handled so far`` on stdout. With ``HOLD_TRANSACTION=<n>`` it
then stops there, inside the open transaction, until it is killed: a test kills it exactly there,
not on a timer. Nothing else differs from the real service.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading

import pika

from brokers.amqp.transactions import TxChannel
from core.settings import Settings
from data_plane.extractor import service
from data_plane.extractor.service import Extractor

HOLD_ENV = "HOLD_TRANSACTION"


def main() -> None:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("pika").setLevel(logging.WARNING)
    extractor = Extractor(Settings.from_env())
    hold = int(os.environ.get(HOLD_ENV, "0"))
    commit_links = service._commit_links
    opened = 0

    def announce(links: TxChannel, connection: pika.BlockingConnection) -> None:
        nonlocal opened
        opened += 1
        print(f"OPEN TRANSACTION {opened}: {extractor.pages} pages handled so far", flush=True)
        if opened == hold:
            threading.Event().wait()  # held open until the test kills the process
        commit_links(links, connection)

    service._commit_links = announce  # type: ignore[assignment]
    signal.signal(signal.SIGTERM, lambda *_: extractor.stop())
    extractor.run()


if __name__ == "__main__":
    main()
