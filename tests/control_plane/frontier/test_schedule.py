"""The revisit rule and the schedule's rows: pure logic and the shard's SQLite store (no brokers)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from dualplane import schemas
from dualplane.brokers.amqp.messages import CrawlTask, JobSpec, MonitorCommand, MonitorSpec, TaskReport
from dualplane.control_plane.frontier.monitors import Monitors
from dualplane.control_plane.frontier.schedule import ScheduledUrl, judge, next_interval_s
from dualplane.control_plane.frontier.store import FrontierState

bounds = st.tuples(st.integers(1, 10_000), st.integers(1, 10_000)).map(sorted)


@given(bounds, st.integers(1, 20_000), st.sampled_from(["changed", "unchanged", "first", "failed"]))
def test_the_interval_stays_within_the_bounds_and_moves_the_right_way(
    limits: list[int], current: int, verdict: str
) -> None:
    low, high = limits
    after = next_interval_s(current, verdict, min_s=low, max_s=high)  # type: ignore[arg-type]
    assert low <= after <= high
    clamped = min(max(current, low), high)
    if verdict == "unchanged":
        assert after >= clamped
    elif verdict == "changed":
        assert after <= clamped
    else:
        assert after == clamped


def test_unchanged_grows_by_half_and_changed_halves() -> None:
    assert next_interval_s(100, "unchanged", min_s=10, max_s=1000) == 150
    assert next_interval_s(100, "changed", min_s=10, max_s=1000) == 50
    assert next_interval_s(15, "changed", min_s=10, max_s=1000) == 10
    assert next_interval_s(900, "unchanged", min_s=10, max_s=1000) == 1000


def test_a_visit_is_judged_by_its_304_or_its_fingerprint() -> None:
    seen = ScheduledUrl(1, "m", "http://a/", 0, 60, fingerprint="f1", visits=1)
    assert judge("not_modified", None, seen) == "unchanged"
    assert judge("ok", "f1", seen) == "unchanged"
    assert judge("ok", "f2", seen) == "changed"
    assert judge("ok", None, seen) == "changed"  # validators said changed (no fingerprint taken)
    assert judge("http_error", None, seen) == "failed"
    assert judge("ok", "f1", ScheduledUrl(1, "m", "http://a/", 0, 60)) == "first"


class Clock:
    def __init__(self) -> None:
        self.now_s = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now_s


def _spec() -> MonitorSpec:
    job = JobSpec(job_id="shop-v1", monitor="shop", max_pages=100)
    return MonitorSpec(monitor_id="shop", job=job, interval_s=100, min_interval_s=10, max_interval_s=1000)


def _report(url: str, outcome: str, **kept: str) -> TaskReport:
    return TaskReport(task_id=url, job_id="shop-v1", trace_id="t", url=url, domain="a", stage="done",
                      outcome=outcome, **kept)  # fmt: skip


def test_a_schedule_survives_the_changelog_and_revisits_only_when_due(tmp_path: Path) -> None:
    state, clock = FrontierState(tmp_path / "a.sqlite"), Clock()
    monitors = Monitors(state, "progress", 0, clock=clock)
    monitors.save(_spec())
    state.save_job(_spec().job)
    state.count("shop-v1", seeded=2)  # the first visit's seeds (its tasks all ended: see below)
    for url in ("http://a/1", "http://a/2"):
        monitors.scheduled(
            "shop", CrawlTask(job_id="shop-v1", trace_id="t", url=url, domain="a", depth=0), None
        )
    monitors.reported(_report("http://a/1", "ok", etag='"e1"'))
    monitors.reported(_report("http://a/2", "ok", fingerprint="f"))
    changes = state.changes()
    state.commit()

    copy = FrontierState(tmp_path / "b.sqlite")
    for name, row in changes:
        copy.apply(name, row)
    copy.commit()
    restored = Monitors(copy, "progress", 0, clock=clock)
    assert sorted(row.url for row in copy.schedule.due(int(clock.now_s) + 100, 10)) == [
        "http://a/1",
        "http://a/2",
    ]
    assert restored.take_due(lambda task: True).issued == 0  # not due yet: nothing twice in an interval

    clock.now_s += 100
    issued: list[CrawlTask] = []
    taken = restored.take_due(lambda task: issued.append(task) is None)
    assert taken.issued == 2 and {t.job_id for t in issued} == {"shop-v2"}  # visit 1 is closed
    assert {t.url: t.validators and t.validators.etag for t in issued} == {
        "http://a/1": '"e1"',
        "http://a/2": None,
    }
    assert restored.take_due(lambda task: True).issued == 0  # leased one interval ahead
    for task in issued:
        outcome = "not_modified" if task.validators else "ok"
        restored.reported(
            _report(task.url, outcome, fingerprint="g").model_copy(update={"job_id": task.job_id})
        )
    rows = {row.url: row for row in copy.schedule.due(int(clock.now_s) + 10_000, 10)}
    assert rows["http://a/1"].interval_s == 150 and rows["http://a/1"].not_modified == 1
    assert rows["http://a/2"].interval_s == 50 and rows["http://a/2"].changes == 1


def test_a_sitemap_lastmod_not_newer_than_the_last_visit_skips_one_revisit(tmp_path: Path) -> None:
    state, clock = FrontierState(tmp_path / "a.sqlite"), Clock()
    monitors = Monitors(state, "progress", 0, clock=clock)
    monitors.save(_spec())
    state.save_job(_spec().job)
    task = CrawlTask(job_id="shop-v1", trace_id="t", url="http://a/1", domain="a", depth=0)
    monitors.scheduled("shop", task, None)
    monitors.reported(_report("http://a/1", "ok", etag='"e1"'))
    monitors.lastmod(
        "shop", "http://a/1", int(clock.now_s - 3600) * 1000
    )  # the sitemap: older than the visit
    clock.now_s += 100
    taken = monitors.take_due(lambda task: True)
    assert (taken.issued, taken.skipped) == (0, 1)
    row = state.schedule.get("shop", "http://a/1")
    assert row is not None and row.interval_s == 150 and row.lastmod_s is None  # unchanged; trusted once
    clock.now_s += 150
    assert monitors.take_due(lambda task: True).issued == 1


def test_a_paused_monitors_due_rows_never_fill_the_window_of_the_others(tmp_path: Path) -> None:
    state = FrontierState(tmp_path / "a.sqlite")
    for number in range(1200):  # older than b's row, more than a pass looks at
        state.schedule.put(ScheduledUrl.new("a", f"http://a/{number}", due_at=10, interval_s=60))
    state.schedule.put(ScheduledUrl.new("b", "http://b/", due_at=20, interval_s=60))
    assert [row.url for row in state.schedule.due(100, 1000, frozenset({"a"}))] == ["http://b/"]
    everything = list(state.schedule.due(100, 5000))
    assert len(everything) == 1201 and len({row.id for row in everything}) == 1201
    assert [row.due_at for row in everything] == sorted(row.due_at for row in everything)


def test_a_visit_stays_open_until_every_url_due_when_it_opened_is_taken(tmp_path: Path) -> None:
    state, clock = FrontierState(tmp_path / "a.sqlite"), Clock()
    monitors = Monitors(state, "progress", 0, clock=clock)
    monitors.save(_spec())
    for number in range(3):
        state.schedule.put(
            ScheduledUrl.new("shop", f"http://a/{number}", due_at=int(clock.now_s) - 1, interval_s=100)
        )
    assert monitors.command(MonitorCommand(monitor_id="shop", action="visit", visit=2)) == "shop-v2"
    assert monitors.pending_visits() == {"shop-v2": 3}
    first = monitors.take_due(lambda task: task.url != "http://a/2")  # no room for one: still due
    assert first.issued == 2 and monitors.pending_visits() == {"shop-v2": 1}
    issued: list[CrawlTask] = []
    monitors.take_due(lambda task: issued.append(task) is None)  # the visit's tasks all ended meanwhile
    assert [(t.url, t.job_id) for t in issued] == [
        ("http://a/2", "shop-v2")
    ] and monitors.pending_visits() == {}


def test_a_revisit_is_a_task_at_the_depth_its_url_was_found_at(tmp_path: Path) -> None:
    """#34: revisits were tasks at depth 0, so a depth-1 monitor's visit 2 admitted the links of its
    depth-1 pages as a seed's (3,142 new URLs, every one a 404). The depth survives the changelog."""
    state, clock = FrontierState(tmp_path / "a.sqlite"), Clock()
    monitors = Monitors(state, "progress", 0, clock=clock)
    monitors.save(_spec())
    state.save_job(_spec().job)
    state.count("shop-v1", seeded=1)
    for url, depth in (("http://a/", 0), ("http://a/product-1", 1)):
        task = CrawlTask(job_id="shop-v1", trace_id="t", url=url, domain="a", depth=depth)
        monitors.scheduled("shop", task, None)
        monitors.reported(_report(url, "ok", fingerprint="f"))
    copy = FrontierState(tmp_path / "b.sqlite")
    for name, row in state.changes():
        copy.apply(name, row)

    clock.now_s += 100
    issued: list[CrawlTask] = []
    Monitors(copy, "progress", 0, clock=clock).take_due(lambda task: issued.append(task) is None)
    assert sorted((t.url, t.depth) for t in issued) == [("http://a/", 0), ("http://a/product-1", 1)]


def test_deleting_a_monitor_drops_its_schedule(tmp_path: Path) -> None:
    state = FrontierState(tmp_path / "a.sqlite")
    monitors = Monitors(state, "progress", 0, clock=Clock())
    monitors.save(_spec())
    for number in range(3):
        state.schedule.put(ScheduledUrl.new("shop", f"http://a/{number}", due_at=10, interval_s=60))
    state.schedule.put(ScheduledUrl.new("other", "http://b/", due_at=10, interval_s=60))

    monitors.command(MonitorCommand(monitor_id="shop", action="delete"))
    assert [row.monitor_id for row in state.schedule.due(100, 10)] == ["other"]


def _events(monitors: Monitors) -> list[tuple[str, str, str]]:
    return [
        (record["kind"], record["job_id"], key)
        for _topic, key, value in monitors.events.drain()
        for record in [schemas.decode(value).record]
    ]


def _visit(monitors: Monitors, clock: Clock, outcomes: dict[str, str]) -> list[CrawlTask]:
    """The next visit: every due URL issued and reported with its outcome (``ok`` unless named)."""
    clock.now_s += 10_000
    issued: list[CrawlTask] = []
    monitors.take_due(lambda task: issued.append(task) is None)
    for task in issued:
        outcome = outcomes.get(task.url, "ok")
        stage = "failed" if outcome == "not_found" else "done"
        report = _report(task.url, outcome, fingerprint="f")
        monitors.reported(report.model_copy(update={"job_id": task.job_id, "stage": stage}))
    return issued


def test_a_url_gone_on_k_visits_in_a_row_leaves_with_one_gone_event(tmp_path: Path) -> None:
    state, clock = FrontierState(tmp_path / "a.sqlite"), Clock()
    monitors = Monitors(state, "progress", 0, clock=clock, gone_after=2)
    monitors.save(_spec())
    state.save_job(_spec().job)
    state.count("shop-v1", seeded=1)
    for url in ("http://a/", "http://a/removed", "http://a/flaky"):
        monitors.scheduled(
            "shop", CrawlTask(job_id="shop-v1", trace_id="t", url=url, domain="a", depth=0), None
        )
        monitors.reported(_report(url, "ok", fingerprint="f"))
    assert _events(monitors) == []  # the first visit's pages are no news

    _visit(monitors, clock, {"http://a/removed": "not_found", "http://a/flaky": "not_found"})
    assert _events(monitors) == []  # once could be a blip
    _visit(monitors, clock, {"http://a/removed": "not_found"})  # flaky is back: its count starts over
    assert _events(monitors) == [("gone", "shop-v3", "http://a/removed")]
    third = _visit(monitors, clock, {"http://a/flaky": "not_found"})
    assert sorted(t.url for t in third) == ["http://a/", "http://a/flaky"]  # removed is not revisited
    assert _events(monitors) == []
    row = state.db.execute("SELECT scheduled, gone FROM monitors WHERE monitor_id = 'shop'").fetchone()
    assert tuple(row) == (2, 1)


def test_a_redirect_leaves_its_place_to_its_target_and_a_later_page_is_new(tmp_path: Path) -> None:
    state, clock = FrontierState(tmp_path / "a.sqlite"), Clock()
    monitors = Monitors(state, "progress", 0, clock=clock)
    monitors.save(_spec())
    state.save_job(_spec().job)
    state.count("shop-v1", seeded=1)
    for url in ("http://a/", "http://a/old"):
        monitors.scheduled(
            "shop", CrawlTask(job_id="shop-v1", trace_id="t", url=url, domain="a", depth=0), None
        )
        monitors.reported(_report(url, "ok", fingerprint="f"))

    second = _visit(monitors, clock, {"http://a/old": "redirect"})
    assert sorted(t.url for t in second) == ["http://a/", "http://a/old"]
    # The target, discovered from the redirect in visit 2, joins the schedule: a new page.
    monitors.scheduled(
        "shop", CrawlTask(job_id="shop-v2", trace_id="t", url="http://a/new", domain="a", depth=0), None
    )
    assert _events(monitors) == [("new", "shop-v2", "http://a/new")]
    monitors.reported(_report("http://a/new", "ok", fingerprint="f").model_copy(update={"job_id": "shop-v2"}))
    third = _visit(monitors, clock, {})
    assert sorted(t.url for t in third) == ["http://a/", "http://a/new"]
