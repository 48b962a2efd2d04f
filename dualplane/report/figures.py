"""The report's figures as inline SVG (matplotlib, no browser-side code): throughput over time,
outcomes by class, a throttle timeline per domain, latency per domain, dead letters by reason.

Each function takes plain rows (:mod:`dualplane.report.data`) and returns an ``<svg>`` string, or
``None`` when there is nothing to draw.
"""

from __future__ import annotations

import io
from collections import Counter
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display: figures are written, never shown
import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from dualplane.data_plane.throttle.events import BLOCKED_OUTCOMES

COLORS = {"ok": "#2b8a3e", "not_found": "#868e96", "redirect": "#1c7ed6", "timeout": "#e67700"}
MAX_DOMAINS = 4  # throttle timelines drawn: the domains with the most blocks


def bucket_s(events: list[dict[str, Any]]) -> float:
    """A bucket width giving about 60 points over the job's duration (at least 1 s)."""
    if len(events) < 2:
        return 1.0
    duration_s = float(events[-1]["fetched_at_s"]) - float(events[0]["fetched_at_s"])
    return max(1.0, float(round(duration_s / 60)))


def throughput(events: list[dict[str, Any]]) -> str | None:
    """Fetches per second over time, all of them and the blocked ones."""
    if not events:
        return None
    width, start = bucket_s(events), events[0]["fetched_at_s"]
    total: Counter[int] = Counter()
    blocked: Counter[int] = Counter()
    for event in events:
        slot = int((event["fetched_at_s"] - start) // width)
        total[slot] += 1
        blocked[slot] += is_blocked(event)
    slots = range(max(total) + 1)
    figure, axes = _figure(8, 3)
    axes.plot(
        [s * width for s in slots], [total[s] / width for s in slots], label="fetches/s", color="#1c7ed6"
    )
    axes.plot(
        [s * width for s in slots], [blocked[s] / width for s in slots], label="blocked/s", color="#c92a2a"
    )
    axes.set(xlabel="seconds since the first fetch", ylabel="per second", title="Throughput")
    axes.legend(loc="upper right")
    return _svg(figure)


def outcomes(events: list[dict[str, Any]]) -> str | None:
    """How many fetches ended in each outcome class."""
    counts = Counter(str(event["outcome"]) for event in events)
    if not counts:
        return None
    names = [name for name, _ in counts.most_common()]
    figure, axes = _figure(8, 3)
    axes.barh(names, [counts[name] for name in names], color=[_color(name) for name in names])
    axes.invert_yaxis()
    axes.set(xlabel="fetches", title="Outcomes by class")
    return _svg(figure)


def throttle_timeline(
    domain: str,
    events: list[dict[str, Any]],
    commands: list[dict[str, Any]],
    start_s: float,
    default: tuple[int, int],
) -> str:
    """One domain: P_d and delay as the throttle set them (steps), and the block ratio per bucket."""
    steps = _limit_steps(commands, start_s, default)
    end_s = max([start_s, *(e["fetched_at_s"] for e in events)]) - start_s
    offsets = [offset for offset, _, _ in steps] + [end_s]
    concurrency = [p_d for _, p_d, _ in steps]
    delays = [delay for _, _, delay in steps]
    figure, axes = _figure(8, 2.6)
    axes.step(offsets, [*concurrency, concurrency[-1]], where="post", label="P_d", color="#1c7ed6")
    axes.set(xlabel="seconds since the first fetch", ylabel="P_d", title=f"Throttle: {domain}")
    axes.set_ylim(0, max(concurrency) + 1)
    share = axes.twinx()
    width = bucket_s(events)
    ratio = _block_ratio(events, start_s, width)
    share.plot([slot * width for slot in ratio], list(ratio.values()), color="#c92a2a", label="block ratio")
    longest = max([*delays, 1])
    share.step(offsets, [d / longest for d in [*delays, delays[-1]]], where="post", color="#e67700",
               linestyle="--", label=f"delay (share of {longest} ms)")  # fmt: skip
    share.set(ylabel="block ratio, delay share", ylim=(0, 1.05))
    figure.legend(loc="upper right", fontsize="small")
    return _svg(figure)


def _limit_steps(
    commands: list[dict[str, Any]], start_s: float, default: tuple[int, int]
) -> list[tuple[float, int, int]]:
    """(seconds since start, P_d, delay ms) at each change; a command from before the job sets the start."""
    steps = [(0.0, *default)]
    for command in commands:
        offset = max(0.0, command["at_s"] - start_s)
        if offset == 0.0:
            steps = []
        steps.append((offset, int(command["concurrency"]), int(command["delay_ms"])))
    return steps


def latency(rows: list[dict[str, Any]]) -> str | None:
    """Median and p95 latency of the slowest domains."""
    if not rows:
        return None
    figure, axes = _figure(8, max(2.0, 0.8 + 0.4 * len(rows)))
    names = [row["domain"] for row in rows]
    axes.barh(names, [row["p95_ms"] for row in rows], color="#fab005", label="p95")
    axes.barh(names, [row["p50_ms"] for row in rows], color="#1c7ed6", label="median")
    axes.invert_yaxis()
    axes.set(xlabel="ms", title="Latency of the slowest domains")
    axes.legend(loc="lower right")
    return _svg(figure)


def dead_letters(letters: list[dict[str, Any]]) -> str | None:
    """Dead letters counted by stage and reason."""
    counts = Counter(f"{letter['stage']}: {str(letter['reason'])[:60]}" for letter in letters)
    if not counts:
        return None
    names = [name for name, _ in counts.most_common(10)]
    figure, axes = _figure(8, max(2.0, 0.8 + 0.4 * len(names)))
    axes.barh(names, [counts[name] for name in names], color="#c92a2a")
    axes.invert_yaxis()
    axes.set(xlabel="dead letters", title="Dead letters by reason")
    return _svg(figure)


def is_blocked(event: dict[str, Any]) -> bool:
    return str(event["outcome"]) in BLOCKED_OUTCOMES


def _block_ratio(events: list[dict[str, Any]], start_s: float, width: float) -> dict[int, float]:
    total: Counter[int] = Counter()
    blocked: Counter[int] = Counter()
    for event in events:
        slot = int((event["fetched_at_s"] - start_s) // width)
        total[slot] += 1
        blocked[slot] += is_blocked(event)
    return {slot: blocked[slot] / total[slot] for slot in sorted(total)}


def _color(outcome: str) -> str:
    return COLORS.get(outcome, "#c92a2a" if outcome in BLOCKED_OUTCOMES else "#495057")


def _figure(width_in: float, height_in: float) -> tuple[Figure, Any]:
    figure, axes = plt.subplots(figsize=(width_in, height_in), layout="constrained")
    return figure, axes


def _svg(figure: Figure) -> str:
    out = io.StringIO()
    figure.savefig(out, format="svg")
    plt.close(figure)
    text = out.getvalue()
    return text[text.index("<svg") :]  # inline: drop the XML prolog and doctype
