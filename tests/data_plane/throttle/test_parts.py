"""Pure parts of the throttle processor: config, events, windows, commands, the limits book."""

from __future__ import annotations

import asyncio
import os
import random
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from faust.windows import HoppingWindow
from pydantic import ValidationError

from dualplane import schemas
from dualplane.core.settings import LimitSettings, Settings, ThrottleSettings
from dualplane.data_plane.throttle.commands import ThrottleCommand
from dualplane.data_plane.throttle.events import parse_fetch_event
from dualplane.data_plane.throttle.exceptions import (
    BadFetchEvent,
    BadThrottleCommand,
    ThrottleError,
)
from dualplane.data_plane.throttle.limits import LimitsBook
from dualplane.data_plane.throttle.policy import Command, PolicyConfig, domain_priority
from dualplane.data_plane.throttle.processor import ThrottleProcessor
from dualplane.data_plane.throttle.quota import quota_pause
from dualplane.data_plane.throttle.signals import WindowCounts
from dualplane.data_plane.throttle.snapshot import read_snapshot, write_snapshot
from dualplane.data_plane.throttle.windows import (
    add_sample,
    bucket_ranges,
    counts_of,
    merged,
    summary,
    window_to_judge,
)
from dualplane.namespaces import private_namespace

pytestmark = pytest.mark.unit

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def event_bytes(outcome: str = "ok", retry_after_s: float | None = None, **changes: Any) -> bytes:
    record = {
        "job_id": "j", "trace_id": "t", "task_id": uuid.uuid4().hex, "url": "https://a.test/",
        "final_url": None, "domain": "A.test", "outcome": outcome, "status": None, "latency_ms": 250,
        "bytes": 10, "attempt": 1, "fetched_at": T0, "retry_after_s": retry_after_s,
    }  # fmt: skip
    return schemas.encode("fetch_event", {**record, **changes})


# -- configuration ------------------------------------------------------------------------------


def throttle_from(monkeypatch: pytest.MonkeyPatch, environ: dict[str, str]) -> Settings:
    for name in list(os.environ):
        if name.startswith("DUALPLANE_"):
            monkeypatch.delenv(name)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    return Settings.from_env()


def test_config_defaults_come_from_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = throttle_from(monkeypatch, {})
    config = settings.throttle
    assert (config.window_size_s, config.window_step_s, config.threshold, config.min_samples) == (
        600,
        60,
        0.05,
        20,
    )
    policy = PolicyConfig.from_settings(settings.throttle, settings.limits)
    assert policy.ceiling == settings.limits.domain_concurrency
    assert policy.base_delay_ms == settings.limits.domain_delay_ms
    assert settings.throttle_app_id == f"{settings.kafka.group_prefix}-throttle"
    assert settings.throttle_snapshot_path == settings.stack.data_dir / "throttle" / "snapshot.json"
    private = private_namespace(settings, "test-ns", Path("/tmp/ns"))
    assert private.throttle_app_id == "test-ns-throttle"


def test_config_reads_every_kind_of_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    environ = {
        "DUALPLANE_THROTTLE_WINDOW_SIZE_S": "10",
        "DUALPLANE_THROTTLE_WINDOW_STEP_S": "2",
        "DUALPLANE_THROTTLE_THRESHOLD": "0.1",
        "DUALPLANE_THROTTLE_LOW_PRIORITY_DOMAINS": " Bulk.test, other.test ,",
        "DUALPLANE_THROTTLE_OFFSET_RESET": "earliest",
        "DUALPLANE_THROTTLE_SNAPSHOT_PATH": "",
        "DUALPLANE_LIMIT_DOMAIN_CONCURRENCY": "9",
    }
    settings = throttle_from(monkeypatch, environ)
    config = settings.throttle
    assert (config.window_size_s, config.window_step_s, config.threshold) == (10, 2, 0.1)
    assert config.low_priority == ("bulk.test", "other.test")
    assert (config.offset_reset, settings.throttle_snapshot_path) == ("earliest", None)
    assert domain_priority("www.bulk.test", config.low_priority) == "low"
    assert domain_priority("notbulk.test", config.low_priority) == "normal"
    policy = PolicyConfig.from_settings(settings.throttle, settings.limits)
    # The fast layer (6 s of 1 s steps) judges step by step; the 10 s window is the slow layer.
    assert (policy.step_s, policy.slow_step_s, policy.ceiling) == (1.0, 2.0, 9)
    one_layer = PolicyConfig.from_settings(config.model_copy(update={"fast_window_s": 0}), settings.limits)
    assert (one_layer.step_s, one_layer.slow_window_s) == (2.0, 0.0)
    assert throttle_from(monkeypatch, settings.to_env()) == settings


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"DUALPLANE_THROTTLE_WINDOW_SIZ_S": "10"}, "unknown variable"),
        ({"DUALPLANE_THROTTLE_MIN_SAMPLES": "many"}, "min_samples"),
        ({"DUALPLANE_THROTTLE_OFFSET_RESET": "middle"}, "'latest' or 'earliest'"),
        ({"DUALPLANE_THROTTLE_WINDOW_SIZE_S": "25", "DUALPLANE_THROTTLE_WINDOW_STEP_S": "10"}, "multiple"),
        ({"DUALPLANE_THROTTLE_FAST_WINDOW_S": "5", "DUALPLANE_THROTTLE_FAST_STEP_S": "2"}, "FAST_STEP_S"),
        ({"DUALPLANE_THROTTLE_THRESHOLD": "1.5"}, r"threshold\n.*less than 1"),
        ({"DUALPLANE_THROTTLE_SESSION_TIMEOUT_S": "1"}, "session_timeout_s"),
    ],
)
def test_config_errors_name_the_variable_and_the_problem(
    monkeypatch: pytest.MonkeyPatch, environ: dict[str, str], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        throttle_from(monkeypatch, environ)


# -- fetch events -------------------------------------------------------------------------------


def test_fetch_event_becomes_a_sample() -> None:
    sample = parse_fetch_event(event_bytes("rate_limited", retry_after_s=30.0))
    assert (sample.domain, sample.fetched_at_s, sample.latency_ms) == ("a.test", T0.timestamp(), 250)
    assert (sample.blocked, sample.timed_out, sample.server_error, sample.retry_after_s) == (
        True,
        False,
        False,
        30.0,
    )
    assert parse_fetch_event(event_bytes("timeout")).timed_out
    assert parse_fetch_event(event_bytes("server_error")).server_error
    assert not parse_fetch_event(event_bytes("something_new")).blocked  # unknown outcomes are not blocks
    assert parse_fetch_event(event_bytes("connection_error")).reset


def test_a_503_is_pushback_and_a_blocked_step_measures_what_the_site_let_through() -> None:
    overloaded = parse_fetch_event(event_bytes("server_error", status=503))
    assert overloaded.overloaded and not parse_fetch_event(event_bytes("server_error", status=500)).overloaded
    busy = add_sample({}, overloaded, partition=0, offset=1)
    blocked = add_sample({}, parse_fetch_event(event_bytes("rate_limited")), partition=0, offset=2)
    for offset in range(3, 6):
        blocked = add_sample(blocked, parse_fetch_event(event_bytes("ok")), partition=0, offset=offset)
    counts = counts_of(merged([busy, blocked]), span_s=2.0, step_s=1.0)
    assert (counts.overloaded, counts.blocked, counts.pushback) == (1, 1, 2.0)
    assert (counts.peak_pass_rps, counts.peak_sent_rps, counts.rate_rps) == (3.0, 4.0, 2.5)


@pytest.mark.parametrize(
    "value",
    [
        None,
        "text",
        b"",
        b"garbage",
        b"\xc3\x01" + b"\x00" * 8,
        ThrottleCommand(domain="x", concurrency=1, delay_ms=0).to_avro(),
    ],
)
def test_anything_else_is_a_bad_fetch_event(value: Any) -> None:
    with pytest.raises(BadFetchEvent):
        parse_fetch_event(value)


# -- windows ------------------------------------------------------------------------------------


def test_adding_is_idempotent_per_offset() -> None:
    blocked = parse_fetch_event(event_bytes("forbidden", retry_after_s=5.0))
    ok = parse_fetch_event(event_bytes("ok"))
    value = add_sample({}, blocked, partition=1, offset=10)
    value = add_sample(value, ok, partition=1, offset=11)
    assert add_sample(value, ok, partition=1, offset=11) == value  # redelivered after a crash
    assert add_sample(value, ok, partition=1, offset=5) == value
    assert counts_of(value) == WindowCounts(total=2, blocked=1, max_retry_after_s=5.0, latency_ms_sum=500)
    assert summary(value, (0.0, 9.9))["latency_ms_avg"] == 250.0
    assert counts_of({}) == WindowCounts()


@pytest.mark.parametrize(("size", "step"), [(600, 60), (10, 2), (120, 2)])
def test_the_judged_window_is_one_faust_keeps(size: int, step: int) -> None:
    window = HoppingWindow(size, step, expires=size + step)
    rng = random.Random(size)
    for _ in range(2000):
        now = rng.uniform(1.7e9, 1.8e9)
        assert window_to_judge(now, float(size), float(step), None) == window.earliest(now)
        changed = window_to_judge(now, float(size), float(step), now - rng.uniform(0, size))
        assert changed is None or changed in window.ranges(now)


@pytest.mark.parametrize(("size", "step"), [(600, 60), (10, 2), (6, 1)])
def test_a_window_summed_from_its_step_buckets_counts_what_a_hopping_table_would(
    size: int, step: int
) -> None:
    """Buckets as a tumbling table keys them; every window, as a hopping table keeps it, equals the
    sum of its buckets."""
    hopping, tumbling = HoppingWindow(size, step), HoppingWindow(step, step)
    outcomes = ["ok", "ok", "rate_limited", "timeout", "server_error", "forbidden"]
    rng = random.Random(size)
    windows: dict[tuple[float, float], dict[str, Any]] = {}
    buckets: dict[tuple[float, float], dict[str, Any]] = {}
    now = 1_800_000_000.0
    for offset in range(400):
        now += rng.uniform(0, step / 3)
        retry_after = rng.choice([None, 1.0, 30.0])
        at = datetime.fromtimestamp(now, UTC)
        sample = parse_fetch_event(
            event_bytes(rng.choice(outcomes), retry_after_s=retry_after, fetched_at=at)
        )
        for window in hopping.ranges(sample.fetched_at_s):
            windows[window] = add_sample(windows.get(window, {}), sample, 0, offset)
        (bucket,) = tumbling.ranges(sample.fetched_at_s)
        buckets[bucket] = add_sample(buckets.get(bucket, {}), sample, 0, offset)
    for window, value in windows.items():
        summed = merged(buckets.get(b, {}) for b in bucket_ranges(window, float(size), float(step)))
        assert summary(summed, window) == summary(value, window)
        assert summed["total"] == value["total"] > 0
    assert merged([]) == {} and counts_of(merged([{}, {}])) == WindowCounts()


def test_after_a_change_only_later_windows_are_judged() -> None:
    assert window_to_judge(1005.0, 10.0, 2.0, None) == (996.0, 1005.9)
    assert window_to_judge(1005.0, 10.0, 2.0, 999.5) == (1000.0, 1009.9)
    assert window_to_judge(1005.0, 10.0, 2.0, 1004.5) is None  # no window after the change yet


# -- commands -----------------------------------------------------------------------------------


def test_command_round_trips_through_json_and_avro_identically() -> None:
    command = ThrottleCommand.from_policy(
        "a.test", Command("pause", 1, 9000, True, "pause: test", ttl_s=60), WindowCounts(total=40, blocked=30)
    )
    assert command.issued_at.microsecond % 1000 == 0  # Avro keeps milliseconds
    assert ThrottleCommand.from_json(command.encode()) == command
    assert ThrottleCommand.from_avro(command.to_avro()) == command
    assert (command.blocked_ratio, command.window_total, command.window_blocked) == (0.75, 40, 30)
    assert command.state_key == "a.test"
    assert command.model_copy(update={"source": "operator"}).state_key == "a.test@operator"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{", "not JSON"),
        (b'{"kind": "task"}', "expected a 'throttle' message"),
        (b'{"kind": "throttle", "version": 9, "domain": "a"}', "unknown throttle message version"),
        (b'{"kind": "throttle", "domain": "a", "concurrency": 0, "delay_ms": 1}', "concurrency"),
    ],
)
def test_bad_json_commands_say_what_is_wrong(body: bytes, message: str) -> None:
    with pytest.raises(BadThrottleCommand, match=message):
        ThrottleCommand.from_json(body)


def test_unknown_json_fields_from_newer_writers_are_ignored() -> None:
    body = b'{"kind":"throttle","domain":"a","concurrency":2,"delay_ms":5,"region":"eu"}'
    assert ThrottleCommand.from_json(body).concurrency == 2


# -- the limits book ----------------------------------------------------------------------------


def command(**fields: Any) -> ThrottleCommand:
    return ThrottleCommand(
        **{"domain": "a.test", "concurrency": 2, "delay_ms": 1000, "issued_at": T0, **fields}
    )


def test_defaults_until_a_command_arrives() -> None:
    book = LimitsBook(default_concurrency=4, default_delay_ms=250)
    assert book.limits("a.test", T0).as_tuple() == (4, 250, False)
    assert book.limits("a.test", T0).source == "default"


def test_operator_override_wins_until_it_expires() -> None:
    book = LimitsBook(4, 250)
    book.apply(command(concurrency=1, delay_ms=8000, reason="halve"))
    book.apply(
        command(concurrency=6, delay_ms=0, source="operator", ttl_s=60, issued_at=T0 + timedelta(seconds=1))
    )
    assert book.limits("a.test", T0 + timedelta(seconds=30)).as_tuple() == (6, 0, False)
    assert book.limits("a.test", T0 + timedelta(seconds=61)).as_tuple() == (1, 8000, False)
    # A newer processor command does not end the override early...
    book.apply(command(concurrency=2, delay_ms=4000, issued_at=T0 + timedelta(seconds=10)))
    assert book.limits("a.test", T0 + timedelta(seconds=30)).source == "operator"
    # ...and the override ends at once when the operator sends ttl_s=0.
    book.apply(
        command(concurrency=6, delay_ms=0, source="operator", ttl_s=0, issued_at=T0 + timedelta(seconds=20))
    )
    assert book.limits("a.test", T0 + timedelta(seconds=30)).as_tuple() == (2, 4000, False)


def test_an_expired_pause_resumes_with_its_limits_and_other_expired_commands_fall_back() -> None:
    book = LimitsBook(4, 250)
    book.apply(command(concurrency=1, delay_ms=9000, paused=True, ttl_s=600))
    assert book.limits("a.test", T0 + timedelta(seconds=599)).as_tuple() == (1, 9000, True)
    assert book.limits("a.test", T0 + timedelta(seconds=600)).as_tuple() == (1, 9000, False)
    book.apply(command(concurrency=3, delay_ms=500, ttl_s=5, issued_at=T0 + timedelta(seconds=601)))
    assert book.limits("a.test", T0 + timedelta(seconds=700)).as_tuple() == (4, 250, False)


def test_a_quota_pause_holds_every_domain_until_it_expires_or_an_operator_clears_it() -> None:
    book = LimitsBook(4, 250)
    book.apply(command(concurrency=1, delay_ms=8000, reason="backoff"))  # a.test was throttled
    sample = parse_fetch_event(event_bytes("quota_exhausted", status=403, domain="b.test"))
    assert sample.quota_exhausted
    pause = quota_pause(sample, 600, LimitSettings(domain_concurrency=4, domain_delay_ms=250), issued_at=T0)
    assert (pause.domain, pause.source, pause.state_key) == ("*", "quota", "*@quota")
    assert ThrottleCommand.from_avro(pause.to_avro()) == pause == ThrottleCommand.from_json(pause.encode())
    book.apply(pause)
    for domain in ("a.test", "b.test", "never.seen"):
        limits = book.limits(domain, T0 + timedelta(seconds=10))
        assert (limits.paused, limits.source) == (True, "quota")
        assert limits.reason.startswith("quota: the scraping API refused a fetch of b.test")
    assert book.limits("a.test", T0 + timedelta(seconds=600)).as_tuple() == (1, 8000, False)  # it ran out
    clear = command(domain="*", source="operator", ttl_s=0, issued_at=T0 + timedelta(seconds=20))
    book.apply(clear)  # the operator raised the budget
    assert book.limits("a.test", T0 + timedelta(seconds=30)).as_tuple() == (1, 8000, False)
    assert book.limits("c.test", T0 + timedelta(seconds=30)).as_tuple() == (4, 250, False)


def test_older_commands_never_replace_newer_ones() -> None:
    book = LimitsBook(4, 250)
    assert book.apply(command(concurrency=1, issued_at=T0 + timedelta(seconds=5)))
    assert not book.apply(command(concurrency=8, issued_at=T0))
    assert not book.apply(command(concurrency=1, issued_at=T0 + timedelta(seconds=5)))  # a duplicate
    assert book.limits("a.test", T0 + timedelta(seconds=9)).concurrency == 1
    assert book.domains() == {"a.test"}


# -- snapshot file ------------------------------------------------------------------------------


def test_snapshot_file_round_trip_and_clear_errors(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "snapshot.json"
    with pytest.raises(ThrottleError, match="dualplane run throttle"):
        read_snapshot(path)
    write_snapshot(path, {"version": 1, "domains": {}})
    assert read_snapshot(path) == {"version": 1, "domains": {}}
    path.write_text("{")
    with pytest.raises(ThrottleError, match="unreadable"):
        read_snapshot(path)
    assert [p.name for p in path.parent.iterdir()] == ["snapshot.json"]  # no temp files left behind


def test_the_processor_pauses_every_domain_once_per_pause_on_quota_events() -> None:
    issued: list[ThrottleCommand] = []

    async def issue(command: ThrottleCommand) -> None:
        issued.append(command)

    processor = SimpleNamespace(  # the attributes _pause_for_quota reads: no Faust app needed
        quota_paused_until_s=0.0, quota={}, config=ThrottleSettings(quota_pause_s=60),
        settings=SimpleNamespace(limits=LimitSettings()), _issue=issue,
    )  # fmt: skip
    start = T0.timestamp()
    for offset_s in (0, 1, 30, 61):  # in-flight fetches refused after the first say nothing new
        event = event_bytes("quota_exhausted", status=403, fetched_at=T0 + timedelta(seconds=offset_s))
        pause = ThrottleProcessor._pause_for_quota(processor, parse_fetch_event(event))  # type: ignore[arg-type]
        asyncio.run(pause)
    assert [c.domain for c in issued] == ["*", "*"]
    assert processor.quota_paused_until_s == start + 61 + 60
    assert processor.quota["reason"].startswith("quota:")
