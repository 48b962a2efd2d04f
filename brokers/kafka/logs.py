"""librdkafka's log lines through Python logging: warnings and worse only, repeats folded.

Left to itself librdkafka writes ``%3|…|FAIL|…`` lines straight to the process's stderr, past our
log format and levels: ``crawl --wait`` printed 105-137 of them during one broker restart, and a
``status`` against a bad broker list 784. Every client is built with :data:`KAFKA_LOG` as its
``logger`` (``brokers.kafka.clients``) and ``log_level`` 4, so librdkafka makes warnings and worse
only, and they reach the ``librdkafka`` logger, where the process's logging configuration (text or
JSON, ``DUALPLANE_LOG_FORMAT``) applies. Connection failures the client retries by itself (a broker
restarting) are warnings, not errors; start-up transients it settles (:data:`SETTLING`) are information,
so a healthy run at the default WARNING prints none. One line per client and kind every
:data:`REPEAT_S` seconds says how many like it were folded.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from dualplane.core.logs import Repeats

LIBRDKAFKA_LOG_LEVEL = 4  # syslog's warning: librdkafka builds no notice, info or debug lines
REPEAT_S = 30.0
# Facilities of failures librdkafka retries on its own: a broker down or restarting, as it says.
RETRIED = frozenset({"FAIL", "ERROR", "REQTMOUT", "DISCONNECT"})
# Start-up transients librdkafka settles by itself, with nothing lost and nothing to do: an idempotent
# producer's "Failed to acquire idempotence PID … retrying" while a broker's coordinator loads. `make demo`
# printed it into its live view; it is information, shown only at INFO.
SETTLING = frozenset({"GETPID"})


class KafkaLog:
    """The ``logger`` of every Kafka client: librdkafka calls :meth:`log` from the client's poll."""

    def __init__(
        self,
        logger: logging.Logger | None = None,
        *,
        repeat_s: float = REPEAT_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.logger = logger or logging.getLogger("librdkafka")
        self.repeat_s = repeat_s
        self._repeats = Repeats(repeat_s, clock)  # per (client name, facility)

    def log(self, level: int, message: str, *args: object) -> None:
        """As :meth:`logging.Logger.log`; confluent-kafka passes ``"%s [%s] %s"``, facility,
        client name and text."""
        facility, client = (str(args[0]), str(args[1])) if len(args) == 3 else ("", "")
        if facility in RETRIED:
            level = min(level, logging.WARNING)
        elif facility in SETTLING:
            level = min(level, logging.INFO)
        folded = self._folded(client, facility)
        if folded is None:
            return
        suffix = f" ({folded} more like it in the last {self.repeat_s:.0f} s)" if folded else ""
        self.logger.log(level, message + suffix, *args)

    def _folded(self, client: str, facility: str) -> int | None:
        """None to fold this line; else how many lines of its kind were folded since the last one."""
        return self._repeats.folded((client, facility))


KAFKA_LOG = KafkaLog()
"""The one instance every client logs through (its folding is per client name and facility)."""
