"""The report page: one ``index.html`` with every figure inline (SVG) and every style inline, so the
directory can be mailed, archived or opened from disk without a network.

A small inline script counts the drawn charts into ``<body data-charts-drawn>`` once the page has
laid out, which is what the headless-browser test reads.
"""

from __future__ import annotations

import statistics
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jinja2 import Environment

from dualplane.control_plane.fetcher.retry_policy import is_success
from dualplane.core.settings import Settings
from dualplane.report import figures
from dualplane.report.data import JobData

TOP = 8  # rows in the slowest and most-failing domain tables
TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>dualplane report: {{ job_id }}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 60em; color: #212529; }
h1 { font-size: 1.5em; } h2 { font-size: 1.15em; margin-top: 2em; border-bottom: 1px solid #dee2e6; }
table { border-collapse: collapse; margin: .5em 0; } td, th { padding: .2em .8em; text-align: right; }
th { background: #f1f3f5; } td:first-child, th:first-child { text-align: left; }
figure { margin: 1em 0; } figure svg { max-width: 100%; height: auto; }
.none { color: #868e96; font-style: italic; }
</style></head>
<body data-charts-drawn="0">
<h1>Crawl job <code>{{ job_id }}</code></h1>
<p>Generated {{ generated }} from <code>{{ topics.fetch_events }}</code>,
<code>{{ topics.job_progress }}</code>, <code>{{ topics.throttle_state }}</code>
and <code>{{ topics.dead_letters }}</code>.</p>
<table>{% for name, value in summary %}<tr><td>{{ name }}</td><td>{{ value }}</td></tr>{% endfor %}</table>
{% for section in sections %}
<h2>{{ section.title }}</h2>
{% if section.svg %}<figure class="chart">{{ section.svg | safe }}</figure>
{% elif section.empty %}<p class="none">{{ section.empty }}</p>{% endif %}
{% if section.note %}<p>{{ section.note }}</p>{% endif %}
{% if section.table %}<table><tr>{% for c in section.table.columns %}<th>{{ c }}</th>{% endfor %}</tr>
{% for row in section.table.rows %}<tr>{% for v in row %}<td>{{ v }}</td>{% endfor %}</tr>{% endfor %}
</table>{% endif %}
{% endfor %}
<script>
window.addEventListener("load", () => {
  const drawn = [...document.querySelectorAll("figure.chart svg")].filter(
    (svg) => svg.getBoundingClientRect().width > 0 && svg.querySelectorAll("path").length > 0);
  document.body.dataset.chartsDrawn = String(drawn.length);
});
</script>
</body></html>
"""


def write_report(settings: Settings, data: JobData, out: Path) -> Path:
    """Write ``out/index.html`` for ``data``; returns its path."""
    out.mkdir(parents=True, exist_ok=True)
    html = (
        Environment(autoescape=True)
        .from_string(TEMPLATE)
        .render(
            job_id=data.job_id,
            generated=datetime.now(UTC).isoformat(timespec="seconds"),
            topics=settings.topics,
            summary=summary(data),
            sections=sections(settings, data),
        )
    )
    path = out / "index.html"
    path.write_text(html, encoding="utf-8")
    return path


def summary(data: JobData) -> list[tuple[str, str]]:
    events, progress = data.events, data.progress or {}
    duration_s = events[-1]["fetched_at_s"] - events[0]["fetched_at_s"] if len(events) > 1 else 0.0
    rows = [("fetches", str(len(events))), ("domains", str(len({e["domain"] for e in events}))),
            ("duration", f"{duration_s:.1f} s"),
            ("pages/s", f"{len(events) / duration_s:.1f}" if duration_s else "-")]  # fmt: skip
    for name in ("seeded", "discovered", "duplicates", "done", "failed", "dead_lettered", "backlog"):
        if name in progress:
            rows.append((name.replace("_", " "), str(progress[name])))
    rows += monitor_rows(data)
    if data.verdict is not None:  # as `crawl --wait` and `status` say it (FinishRule)
        state = "finished" if data.verdict.finished else "not finished"
        rows.append(("state", f"{state}: {data.verdict.why}"))
    return rows


def monitor_rows(data: JobData) -> list[tuple[str, str]]:
    """A monitor's visit: this visit's 304s, then the monitor's schedule as its shards last published it."""
    monitor = data.monitor
    if monitor is None:
        return []
    fetched = [e for e in data.events if e["outcome"] in ("ok", "not_modified")]
    unchanged = sum(1 for e in fetched if e["outcome"] == "not_modified")
    share = f"{unchanged / len(fetched):.1%}" if fetched else "-"
    oldest = f" (oldest {monitor['oldest_overdue_s']} s)" if monitor["overdue"] else ""
    return [
        ("monitor", f"{monitor['monitor_id']} (visit {monitor['visit']} is its newest)"),
        ("this visit: 304s", f"{unchanged} of {len(fetched)} pages ({share})"),
        ("monitor: URLs scheduled", str(monitor["scheduled"])),
        ("monitor: due now", str(monitor["due_now"])),
        ("monitor: overdue", f"{monitor['overdue']}{oldest}"),
        ("monitor: change rate", "-" if monitor["change_rate"] is None else f"{monitor['change_rate']:.1%}"),
        ("monitor: share of 304s", "-" if monitor["share_304"] is None else f"{monitor['share_304']:.1%}"),
    ]


def sections(settings: Settings, data: JobData) -> list[dict[str, Any]]:
    events = data.events
    slow, failing = domain_tables(events)
    slow_rows = [[r["domain"], r["fetches"], r["p50_ms"], r["p95_ms"]] for r in slow]
    letters = Counter((letter["stage"], letter["reason"]) for letter in data.dead_letters)
    letter_rows: list[list[Any]] = [[stage, reason, n] for (stage, reason), n in letters.most_common()]
    return [
        _section("Throughput over time", figures.throughput(events), "no fetch events for this job"),
        _section("Outcomes by class", figures.outcomes(events), "no fetch events for this job"),
        *throttle_sections(settings, data),
        _section("Slowest domains", figures.latency(slow), "no fetch events",
                 (["domain", "fetches", "median ms", "p95 ms"], slow_rows)),
        _section("Most-failing domains", None, "" if failing else "no failed fetch",
                 (["domain", "fetches", "not ok", "share"], failing)),
        _section("Dead letters by reason", figures.dead_letters(data.dead_letters), "no dead letter",
                 (["stage", "reason", "count"], letter_rows)),
    ]  # fmt: skip


def throttle_sections(settings: Settings, data: JobData) -> list[dict[str, Any]]:
    """A timeline for the domains with the most blocks (all domains when none was blocked: the first few)."""
    if not data.events:
        return []
    blocks = Counter(e["domain"] for e in data.events if figures.is_blocked(e))
    domains = sorted({e["domain"] for e in data.events}, key=lambda d: (-blocks[d], d))[: figures.MAX_DOMAINS]
    default = (settings.limits.domain_concurrency, settings.limits.domain_delay_ms)
    start_s = data.events[0]["fetched_at_s"]
    result = []
    for domain in domains:
        events = [e for e in data.events if e["domain"] == domain]
        commands = [c for c in data.commands if c["domain"] == domain and c.get("source", "auto") == "auto"]
        svg = figures.throttle_timeline(domain, events, commands, start_s, default)
        note = f"{len(commands)} throttle command(s), {blocks[domain]} blocked of {len(events)} fetches"
        result.append({**_section(f"Throttle timeline: {domain}", svg, ""), "note": note})
    return result


def domain_tables(events: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[list[Any]]]:
    """The slowest domains by p95 latency, and the domains with the largest share of fetches that
    failed (a 304 on a revisit or a redirect is no failure: :func:`is_success`)."""
    by_domain: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        by_domain.setdefault(event["domain"], []).append(event)
    slow: list[dict[str, Any]] = []
    failing: list[tuple[float, list[Any]]] = []
    for domain, rows in by_domain.items():
        latencies = sorted(int(e["latency_ms"]) for e in rows)
        p95 = latencies[min(len(latencies) - 1, int(0.95 * len(latencies)))]
        slow.append({"domain": domain, "fetches": len(rows), "p50_ms": int(statistics.median(latencies)),
                     "p95_ms": p95})  # fmt: skip
        bad = sum(1 for e in rows if not is_success(e["outcome"]))
        if bad:
            failing.append((bad / len(rows), [domain, len(rows), bad, f"{bad / len(rows):.0%}"]))
    slow.sort(key=lambda row: -int(row["p95_ms"]))
    failing.sort(key=lambda pair: -pair[0])
    return slow[:TOP], [row for _, row in failing[:TOP]]


def _section(
    title: str, svg: str | None, empty: str, table: tuple[list[str], list[list[Any]]] | None = None
) -> dict[str, Any]:
    shown = {"columns": table[0], "rows": table[1]} if table and table[1] else None
    return {"title": title, "svg": svg, "empty": empty, "table": shown}
