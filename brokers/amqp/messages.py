"""Versioned, validated control messages and their JSON wire format.

Every body is a JSON object with ``kind`` and ``version``. :func:`decode` turns any body into a
typed message or raises :class:`MessageRejected` with a reason a person can act on; consumers
dead-letter such messages at once instead of retrying them.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal, Self, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from dualplane.brokers.amqp import lanes
from dualplane.brokers.amqp.exceptions import MessageRejected
from dualplane.core.clock import utc_now
from dualplane.core.json_bounds import JsonTooDeep, loads_bounded
from dualplane.core.settings.checks import MAX_DURATION_S

Priority = lanes.Priority  # defined apart for the topology (see lanes.py); named here as before
PRIORITIES = lanes.PRIORITIES
CONTENT_TYPE = "application/json"


def new_id() -> str:
    return uuid.uuid4().hex


class ControlMessage(BaseModel):
    """Base of every control message: a ``kind`` naming the type and a schema ``version``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: ClassVar[str]
    versions: ClassVar[frozenset[int]] = frozenset({1})
    # Optional fields added after a kind was first sent: left out of the body while unset, so that a
    # worker of before them (``extra="forbid"``) still reads every message that does not use them.
    omitted_when_none: ClassVar[frozenset[str]] = frozenset()
    version: int = 1

    def encode(self) -> bytes:
        unset = {name for name in self.omitted_when_none if getattr(self, name) is None}
        fields = self.model_dump(mode="json", exclude=unset or None)
        return json.dumps({"kind": self.kind, **fields}, separators=(",", ":")).encode()


class AttemptRecord(BaseModel):
    """One earlier attempt at a task, kept in the task so a dead letter tells its whole story."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    attempt: int
    at: datetime
    outcome: str
    detail: str = ""


EXTRACTOR_NAME = r"^[A-Za-z0-9][\w.-]{0,99}$"
MAX_JOB_ID = 200


def check_job_id(value: str) -> str:
    """``value`` if it can be a job id, else ValueError saying why not."""
    # A job id names S3 prefixes, WARC headers, log lines and metric labels: a line break in one
    # could split a header line or a log record, so control characters are refused where jobs are made.
    if not value:
        raise ValueError("a job id cannot be empty")
    if len(value) > MAX_JOB_ID:
        raise ValueError(f"a job id is at most {MAX_JOB_ID} characters, this one has {len(value)}")
    control = next((char for char in value if ord(char) < 0x20 or ord(char) == 0x7F), None)
    if control is not None:
        raise ValueError(f"a job id cannot hold control characters such as {control!r}")
    return value


JobId = Annotated[str, AfterValidator(check_job_id)]


class JobSpec(ControlMessage):
    """A crawl job's rules, sent to the frontier before its seeds."""

    kind = "job"

    job_id: JobId
    allowed_domains: tuple[str, ...] = ()
    allow_patterns: tuple[str, ...] = ()
    deny_patterns: tuple[str, ...] = ()
    max_depth: int | None = Field(default=None, ge=0)
    max_pages: int | None = Field(default=None, ge=1)
    priority: Priority = "normal"
    obey_robots: bool = True
    created_at: datetime = Field(default_factory=utc_now)
    # The extractor plugin (entry point name, group dualplane.extractors) for the job's pages.
    extractor: str | None = Field(default=None, pattern=EXTRACTOR_NAME)
    # The monitor this job is a visit of (see MonitorSpec): its fetched URLs join the monitor's
    # schedule. Left out when unset, so a frontier of before monitors reads every other job.
    monitor: str | None = None
    # Pages admitted per domain (per visit, for a monitor's job); a domain's profile may set a tighter
    # one (``profile set --page-budget``). Left out when unset, like ``monitor``.
    domain_budget: int | None = Field(default=None, ge=1)

    omitted_when_none = frozenset({"monitor", "domain_budget"})

    @field_validator("allow_patterns", "deny_patterns")
    @classmethod
    def _regexes(cls, patterns: tuple[str, ...]) -> tuple[str, ...]:
        # Checked where the job is made and where it is read: a bad one used to be accepted by
        # ``crawl`` and the job then rejected by the frontier, silently.
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as error:
                raise ValueError(f"{pattern!r} is not a regular expression: {error}") from error
        return patterns


class JobCancel(ControlMessage):
    """Stop a job: sent to every frontier shard, which admits none of its URLs from then on, drops its
    backlog and ends its queued tasks; fetchers drop its tasks unfetched (see ``dualplane job cancel``)."""

    kind = "job_cancel"

    job_id: JobId
    cancelled_at: datetime = Field(default_factory=utc_now)


class JobPause(ControlMessage):
    """Hold a job (``paused``) or let it go on (not ``paused``): sent to every frontier shard, which
    issues none of its tasks while it is paused and keeps its backlog; fetchers send its tasks back
    unfetched (see ``dualplane job pause``). Nothing of the job is dropped."""

    kind = "job_pause"

    job_id: JobId
    paused: bool = True
    at: datetime = Field(default_factory=utc_now)


class DiscoveredUrl(ControlMessage):
    """A URL someone found (a seed, or a link on a fetched page) for the frontier to consider."""

    kind = "discovered"

    job_id: JobId
    trace_id: str = Field(default_factory=new_id)
    url: Annotated[str, Field(min_length=1, max_length=8192)]
    depth: int = Field(default=0, ge=0)
    priority: Priority | None = None
    source_url: str | None = None
    seed: bool = False


MAX_URL_CHARS = 8192
MAX_BATCH_URLS = 1000


class DiscoveredBatch(ControlMessage):
    """The URLs one page (or one slice of a seed list) hands to one frontier shard, as one message.

    A page's links travel together: one publish and one frontier pass per page and shard instead of
    one per link. ``trace_id`` is the source page's; each admitted task gets a trace of its own.
    """

    kind = "discovered_batch"

    job_id: JobId
    trace_id: str = Field(default_factory=new_id)
    urls: tuple[Annotated[str, Field(min_length=1, max_length=MAX_URL_CHARS)], ...] = Field(
        min_length=1, max_length=MAX_BATCH_URLS
    )
    depth: int = Field(default=0, ge=0)
    priority: Priority | None = None
    source_url: str | None = None
    seed: bool = False
    # Seeds read from a sitemap: each URL's <lastmod> in epoch ms (None where it gave none), so that
    # a monitor can skip revisiting a page its site says did not change. Left out when unset.
    lastmods_ms: tuple[int | None, ...] | None = None

    omitted_when_none = frozenset({"lastmods_ms"})

    @model_validator(mode="after")
    def _one_lastmod_a_url(self) -> Self:
        if self.lastmods_ms is not None and len(self.lastmods_ms) != len(self.urls):
            raise ValueError(f"{len(self.lastmods_ms)} lastmods_ms for {len(self.urls)} urls; give one a URL")
        return self


MAX_VALIDATOR_CHARS = 1024


def check_header_value(value: str | None) -> str | None:
    """``value`` if it can stand in a request header as it is, else ValueError saying why not."""
    # A validator is sent back to the site as a header: a line break in one would add a header of
    # the sender's choosing to our request.
    if value is not None and any((ord(char) < 0x20 and char != "\t") or ord(char) == 0x7F for char in value):
        raise ValueError(f"a validator cannot hold control characters: {value[:80]!r}")
    return value


HeaderValue = Annotated[str | None, Field(max_length=MAX_VALIDATOR_CHARS)]


class Validators(BaseModel):
    """The validators of a page's last response, sent back on a revisit (RFC 9110, section 13.1).

    ``etag`` goes out as ``If-None-Match`` and ``last_modified`` as ``If-Modified-Since``, each
    exactly as the server sent it; a server whose page did not change answers 304 with no body.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    etag: HeaderValue = None
    last_modified: HeaderValue = None

    @field_validator("etag", "last_modified")
    @classmethod
    def _header_safe(cls, value: str | None) -> str | None:
        return check_header_value(value)

    @model_validator(mode="after")
    def _some(self) -> Self:
        if self.etag is None and self.last_modified is None:
            raise ValueError("validators need an etag, a last_modified or both")
        return self

    @classmethod
    def from_headers(cls, headers: Mapping[str, str]) -> Validators | None:
        """The validators in a raw page's ``headers`` (lower-case names), or None when it has none."""
        etag, modified = headers.get("etag") or None, headers.get("last-modified") or None
        if etag is None and modified is None:
            return None
        return cls(etag=etag, last_modified=modified)

    def request_headers(self) -> dict[str, str]:
        """The conditional request headers these validators make."""
        headers = {}
        if self.etag is not None:
            headers["If-None-Match"] = self.etag
        if self.last_modified is not None:
            headers["If-Modified-Since"] = self.last_modified
        return headers


class CrawlTask(ControlMessage):
    """One URL to fetch, admitted by the frontier; the unit of work of the fetchers."""

    kind = "task"

    task_id: str = Field(default_factory=new_id)
    job_id: JobId
    trace_id: str
    url: str
    domain: str
    depth: int = Field(ge=0)
    priority: Priority = "normal"
    attempt: int = Field(default=1, ge=1)
    max_attempts: int = Field(default=5, ge=1)
    created_at: datetime = Field(default_factory=utc_now)
    not_before: datetime | None = None
    crawl_delay_ms: int | None = Field(default=None, ge=0)  # robots.txt Crawl-delay, when stricter
    extractor: str | None = None  # the job's extractor plugin, carried to the raw page
    history: tuple[AttemptRecord, ...] = ()
    # A revisit's validators: the fetch is then a conditional GET, and a 304 ends it as not_modified.
    validators: Validators | None = None

    omitted_when_none = frozenset({"validators"})

    def next_attempt(self, outcome: str, detail: str, not_before: datetime | None) -> CrawlTask:
        """The same task for its next attempt, with this attempt added to its history."""
        record = AttemptRecord(attempt=self.attempt, at=utc_now(), outcome=outcome, detail=detail)
        return self.model_copy(
            update={"attempt": self.attempt + 1, "not_before": not_before, "history": (*self.history, record)}
        )


ReportStage = Literal["started", "retrying", "done", "failed", "dead_lettered"]
FINAL_STAGES: frozenset[str] = frozenset({"done", "failed", "dead_lettered"})


class TaskReport(ControlMessage):
    """What happened to a task, sent by the fetcher back to the frontier (counters, admission)."""

    kind = "report"

    task_id: str
    job_id: JobId
    trace_id: str
    url: str
    domain: str
    stage: ReportStage
    outcome: str = ""
    attempt: int = 1
    detail: str = ""
    at: datetime = Field(default_factory=utc_now)
    # A done page's links beyond DUALPLANE_FETCH_MAX_LINKS_PER_PAGE, not handed on (job progress counts them).
    links_over_limit: int = Field(default=0, ge=0)
    # What a monitor keeps of a done page for its next visit: the response's validators, and for a page
    # without any, a fingerprint of its visible text (``control_plane.fetcher.fingerprint``). Left out
    # when unset, so a frontier of before monitors still reads every report.
    etag: HeaderValue = None
    last_modified: HeaderValue = None
    fingerprint: str | None = Field(default=None, max_length=64)

    omitted_when_none = frozenset({"etag", "last_modified", "fingerprint"})

    @field_validator("etag", "last_modified")
    @classmethod
    def _header_safe(cls, value: str | None) -> str | None:
        return check_header_value(value)

    @property
    def validators(self) -> Validators | None:
        """The validators this report carries, to send back on the next visit (None: none)."""
        if self.etag is None and self.last_modified is None:
            return None
        return Validators(etag=self.etag, last_modified=self.last_modified)

    @property
    def final(self) -> bool:
        return self.stage in FINAL_STAGES


MAX_BATCH_REPORTS = 1000


class TaskReports(ControlMessage):
    """The reports a fetcher has for one frontier shard after one pass, as one message.

    Sent with the pass's commit, in the same AMQP transaction as the acks of the tasks they report
    on: one publish, one frontier handling and one handled-message record per pass and shard, where
    a report each cost two of each per task (started, then done).
    """

    kind = "reports"

    reports: tuple[TaskReport, ...] = Field(min_length=1, max_length=MAX_BATCH_REPORTS)

    def encode(self) -> bytes:
        # Each report as it would be sent alone: its unset optional fields left out (see ControlMessage).
        reports = [json.loads(report.encode()) for report in self.reports]
        for report in reports:
            del report["kind"]
        return json.dumps({"kind": self.kind, "version": self.version, "reports": reports},
                          separators=(",", ":")).encode()  # fmt: skip


class Wake(ControlMessage):
    """A nudge a frontier sends to its own shard queue, so that whichever frontier the broker made
    the shard's active consumer gets a delivery and takes the shard over.

    A frontier learns that it owns its shard only from a delivery (a single-active-consumer queue
    says nothing else): an owner that took over a quiet shard, or that lost Kafka in a pass holding
    only the jobs' progress, would otherwise never publish that progress, and a finished job would
    look unfinished for good. It changes no state.
    """

    kind = "wake"

    shard: int = Field(ge=0)


MONITOR_ID = r"^[A-Za-z0-9][\w.-]{0,99}$"


def visit_job_id(monitor_id: str, visit: int) -> str:
    """The job id of a monitor's ``visit`` (1 for the first): an ordinary job for status and reports."""
    return f"{monitor_id}-v{visit}"


def visit_of(job_id: str, monitor_id: str | None) -> int | None:
    """The visit number of ``job_id`` if it is a visit job of ``monitor_id``, else None."""
    prefix = f"{monitor_id}-v"
    if monitor_id is None or not job_id.startswith(prefix) or not job_id[len(prefix) :].isdigit():
        return None
    return int(job_id[len(prefix) :])


class MonitorSpec(ControlMessage):
    """A monitor: a crawl job that comes back, sent to every frontier shard before its first visit.

    ``job`` holds the rules of every visit (scope, priority lane, page budget per visit as
    ``max_pages``); its ``job_id`` is the first visit's. Each fetched URL joins the shard's schedule
    and is revisited after ``interval_s``, sooner when it changes, later when it does not, within
    ``min_interval_s`` and ``max_interval_s`` (``control_plane.frontier.schedule``).
    """

    kind = "monitor"

    monitor_id: Annotated[str, Field(pattern=MONITOR_ID)]
    job: JobSpec
    # Bounded: an interval of 99999999999999999999 days overflowed SQLite's integers in the frontier.
    interval_s: int = Field(ge=1, le=MAX_DURATION_S)
    min_interval_s: int = Field(ge=1, le=MAX_DURATION_S)
    max_interval_s: int = Field(ge=1, le=MAX_DURATION_S)
    seeds: int = Field(default=0, ge=0)  # how many seeds the first visit was given (shown by `monitor show`)
    sitemaps: tuple[str, ...] = ()
    created_at: datetime = Field(default_factory=utc_now)

    @model_validator(mode="after")
    def _intervals(self) -> Self:
        if not self.min_interval_s <= self.interval_s <= self.max_interval_s:
            raise ValueError(
                f"the interval ({self.interval_s} s) must lie within --min-interval "
                f"({self.min_interval_s} s) and --max-interval ({self.max_interval_s} s)"
            )
        if self.job.monitor != self.monitor_id:
            raise ValueError(f"the job's monitor is {self.job.monitor!r}, not {self.monitor_id!r}")
        return self


MonitorAction = Literal["pause", "resume", "delete", "visit"]


class MonitorCommand(ControlMessage):
    """A change to a monitor, sent to every frontier shard: pause or resume its revisits, delete it
    with its schedule, or ``visit`` now (every scheduled URL due at once, in visit number ``visit``)."""

    kind = "monitor_command"

    monitor_id: Annotated[str, Field(pattern=MONITOR_ID)]
    action: MonitorAction
    visit: int | None = Field(default=None, ge=2)
    at: datetime = Field(default_factory=utc_now)


MESSAGE_TYPES: dict[str, type[ControlMessage]] = {
    message.kind: message
    for message in (
        JobSpec, JobCancel, JobPause, DiscoveredUrl, DiscoveredBatch, CrawlTask, TaskReport, TaskReports,
        Wake, MonitorSpec, MonitorCommand,
    )
}  # fmt: skip
M = TypeVar("M", bound=ControlMessage)


def decode(body: bytes, expected: type[M] | tuple[type[ControlMessage], ...] | None = None) -> Any:
    """Parse ``body`` into its message type, or raise :class:`MessageRejected` saying why not."""
    fields = _json_object(body)
    kind, version = fields.pop("kind", None), fields.get("version", 1)
    message_type = MESSAGE_TYPES.get(kind) if isinstance(kind, str) else None
    if message_type is None:
        raise MessageRejected(f"unknown message kind {kind!r}; known kinds: {', '.join(MESSAGE_TYPES)}")
    if not isinstance(version, int) or version not in message_type.versions:  # [] is not hashable
        known = ", ".join(str(v) for v in sorted(message_type.versions))
        raise MessageRejected(
            f"unknown version {version!r} of {kind!r} messages; this worker understands {known}: "
            "upgrade the worker, or fix the message and redrive it"
        )
    allowed = expected if isinstance(expected, tuple) else (expected,) if expected else None
    if allowed is not None and message_type not in allowed:
        names = ", ".join(t.kind for t in allowed)
        raise MessageRejected(f"a {kind!r} message arrived where only {names} are expected")
    try:
        return message_type.model_validate(fields)
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors())
        raise MessageRejected(f"invalid {kind!r} message: {problems}") from error


def _json_object(body: bytes) -> dict[str, Any]:
    try:
        fields = loads_bounded(body)
    except JsonTooDeep as error:  # refused before parsing: deep nesting raises RecursionError there
        raise MessageRejected(f"{error}; body starts {body[:40].decode('utf-8', 'replace')!r}") from error
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        preview = body[:80].decode("utf-8", "replace")
        raise MessageRejected(f"malformed JSON ({error}); body starts {preview!r}") from error
    if not isinstance(fields, dict):
        raise MessageRejected(f"expected a JSON object, got {type(fields).__name__}")
    return fields
