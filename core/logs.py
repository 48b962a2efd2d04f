"""Log lines for people or for log systems, and the page a line is about.

``DUALPLANE_LOG_FORMAT=json`` writes one JSON object per line (python-json-logger): ``time`` (UTC,
ISO 8601), ``level``, ``logger``, ``message``, ``process``, ``thread``, an ``exc_info`` when there
is one, and, on every line written while a page is being handled, ``trace_id``, ``job_id``,
``domain`` and ``url``. A log system can then index a page's whole story by its trace id.

The page comes from a context variable, not from each call: the stages wrap the handling of a task,
message or page in :func:`page_context` (or :func:`bind_page` inside an asyncio task, where the
variable is the task's own), and :class:`PageFilter` copies it onto every record, including those of
libraries logging on the stage's behalf (httpx inside a fetch, for example).

Client libraries that reconnect by themselves (aiokafka and Faust/mode in the throttle worker, pika
everywhere) log a broker restart as ERROR, with tracebacks, line after line: one Kafka restart and one
RabbitMQ restart, nothing lost, gave 22 tracebacks and 3,431 ERROR lines in two minutes (2,570 of
them aiokafka's "Unable to update metadata"). :class:`RecoveringLibraries` makes each of their lines
a WARNING of one line (the exception's type and text instead of its traceback) and folds repeats, in
every process: ERROR is left for what needs a person.
"""

from __future__ import annotations

import contextvars
import logging
import threading
import time
from collections.abc import Callable, Mapping

from pythonjsonlogger.json import JsonFormatter

from dualplane.core.settings import LogFormat

PAGE_FIELDS = ("trace_id", "job_id", "domain", "url")
NOISY_LOGGERS = ("pika", "httpx", "httpcore")  # one line per request or per AMQP frame
# Loggers (and their children) of libraries that retry a lost broker by themselves.
RECOVERING_LIBRARIES = ("aiokafka", "pika", "mode", "faust")
REPEAT_S = 30.0  # a kind of line is written once per this long, then says how many were folded

_page: contextvars.ContextVar[Mapping[str, object] | None]
_page = contextvars.ContextVar("dualplane_page", default=None)


class page_context:
    """Within the block, log records carry ``page``'s trace_id, job_id, domain and url (those given;
    other keys are ignored, so a raw page record can be passed whole)."""

    __slots__ = ("_page", "_token")

    def __init__(self, **page: object) -> None:
        self._page = page  # picked apart only when a line is written (PageFilter)

    def __enter__(self) -> None:
        self._token = _page.set(self._page)

    def __exit__(self, *exc_info: object) -> None:
        _page.reset(self._token)


def page_of(thing: object) -> dict[str, object]:
    """The page fields ``thing`` has as attributes (a crawl task, a task report, a discovery batch)."""
    return {name: getattr(thing, name, None) for name in PAGE_FIELDS}


def bind_page(**page: object) -> None:
    """Like :func:`page_context`, for the rest of the current asyncio task (its context is its own)."""
    _page.set(page)


def current_page() -> dict[str, str]:
    """The page fields of the current context (those set and not None), as strings."""
    page = _page.get()
    if not page:
        return {}
    return {name: str(page[name]) for name in PAGE_FIELDS if page.get(name) is not None}


class PageFilter(logging.Filter):
    """Copies the current page's fields onto each record (attributes a JSON formatter writes)."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name, value in current_page().items():
            setattr(record, name, value)
        return True


class Repeats:
    """Folds repeated lines: :meth:`folded` says, per kind of line, whether to write this one."""

    def __init__(self, repeat_s: float = REPEAT_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.repeat_s = repeat_s
        self.clock = clock
        self._lock = threading.Lock()
        self._last: dict[tuple[str, str], tuple[float, int]] = {}  # kind -> (written at, folded since)

    def folded(self, kind: tuple[str, str]) -> int | None:
        """None to fold this line; else how many lines of its kind were folded since the last one."""
        now = self.clock()
        with self._lock:
            last = self._last.get(kind)
            if last is not None and now - last[0] < self.repeat_s:
                self._last[kind] = (last[0], last[1] + 1)
                return None
            self._last[kind] = (now, 0)
            if len(self._last) > 10_000:  # kinds come and go (client names): forget the oldest
                self._last = dict(sorted(self._last.items(), key=lambda item: item[1][0])[-5_000:])
        return last[1] if last is not None else 0


class RecoveringLibraries(logging.Filter):
    """A handler's filter: lines of :data:`RECOVERING_LIBRARIES` are at most WARNING, one line each
    (an exception as ``Type: text``, not a traceback), and each kind (logger and message template)
    is written once per ``repeat_s``, saying how many like it were folded."""

    def __init__(self, repeats: Repeats | None = None) -> None:
        super().__init__()
        self.repeats = repeats or Repeats()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.split(".", 1)[0] not in RECOVERING_LIBRARIES:
            return True
        folded = self.repeats.folded((record.name, str(record.msg)))
        if folded is None:
            return False
        # The first line only: pika writes the caller's stack into the message itself.
        text = record.getMessage().split("\n", 1)[0]
        error = record.exc_info[1] if record.exc_info else None
        if error is not None and str(error) not in text:
            text += f" ({type(error).__name__}: {error})"
        if folded:
            text += f" ({folded} more like it in the last {self.repeats.repeat_s:.0f} s)"
        record.msg, record.args = text, None
        record.exc_info = record.exc_text = None
        record.stack_info = None
        if record.levelno > logging.WARNING:
            record.levelno, record.levelname = logging.WARNING, logging.getLevelName(logging.WARNING)
        return True


class _UtcJsonFormatter(JsonFormatter):
    """JSON lines with an ISO 8601 UTC time in milliseconds."""

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        seconds = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        return f"{seconds}.{int(record.msecs):03d}Z"


def json_formatter() -> logging.Formatter:
    fields = ["asctime", "levelname", "name", "message", "process", "threadName"]
    renamed = {"asctime": "time", "levelname": "level", "name": "logger", "threadName": "thread"}
    return _UtcJsonFormatter(fields, rename_fields=renamed, json_ensure_ascii=False)


def configure(level: str, log_format: LogFormat, handler: logging.Handler | None = None) -> logging.Handler:
    """Install one root handler: ``handler`` (e.g. rich, for text on a terminal) or a stream handler
    writing plain lines (``text``) or JSON objects (``json``) to stderr. Returns the handler."""
    if log_format == "json":
        handler = logging.StreamHandler()
        handler.setFormatter(json_formatter())
    elif handler is None:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(PageFilter())
    handler.addFilter(RecoveringLibraries())
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)
    for noisy in NOISY_LOGGERS:
        logging.getLogger(noisy).setLevel(logging.WARNING)
    return handler
