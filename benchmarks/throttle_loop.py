"""The throttle feedback loop as a plot: the site's request rate and blocks against the fleet's limits.

Runs :mod:`tests.support.anti_bot_loop` (the frontier and a fetcher in this process, the Faust processor
as a child, a sample-site host that blocks beyond ``--max-rps``; anti-bot off after ``--blocking-s``)
and writes the time series as JSON and a PNG: requests/s and blocked requests/s as the site counted
them, with its limit; below, P_d and the delay the fleet was running at. Prints the summary figures.
The processor runs at the shipped ``DUALPLANE_THROTTLE_*`` defaults, a fresh domain, P_d 8 and delay
0 (so the site's limit binds); ``--tuned`` is the labelled second row (6 s windows, one layer).
The site is the sample site (a generated shop, 20 ms per page), not a real one.
Needs the stack up (``dualplane stack up``).

    .venv/bin/python benchmarks/throttle_loop.py --out benchmarks/results/throttle_loop \
        [--max-rps 5] [--mode captcha|429] [--retry-after 1|0] [--tuned] [--blocking-s 90] \
        [--relaxed-s 60] [--json]
    .venv/bin/python benchmarks/throttle_loop.py --out docs/throttle_loop --combine a.json b.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt
from matplotlib import ticker

from dualplane.core.settings import Settings
from dualplane.namespaces import drop_namespace

# Test harnesses live in the checkout's tests/support, not in the installed package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.support.anti_bot_loop import LoopResult, LoopSpec, Sample, loop_settings, run_loop


def plot(results: list[LoopResult], path: Path) -> None:
    """Two panels sharing time per run: what the site saw, and the limits the fleet ran at."""
    rows = [ratio for _ in results for ratio in (3, 2)]
    figure, axes = plt.subplots(len(rows), 1, figsize=(10, 3.3 * len(results)), height_ratios=rows)
    for index, result in enumerate(results):
        _draw(result, axes[2 * index], axes[2 * index + 1])
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def _draw(result: LoopResult, site: Any, fleet: Any) -> None:
    samples, spec = result.samples, result.spec
    t = [s.t_s for s in samples]
    site.plot(t, [s.requests for s in samples], label="requests/s (site)", color="tab:blue")
    site.plot(t, [s.rate_10s for s in samples], label="10 s average", color="tab:blue", alpha=0.4)
    blocked_label = f"blocked/s ({'429' if spec.mode == '429' else 'captcha page, 200'})"
    site.bar(t, [s.blocked for s in samples], width=0.8, label=blocked_label, color="tab:red")
    limit_label = f"site limit R = {spec.max_rps:g}/s"
    site.axhline(spec.max_rps, linestyle="--", color="black", linewidth=1, label=limit_label)
    site.set_ylabel("per second")
    site.set_yscale("symlog", linthresh=10)
    site.legend(loc="upper left", fontsize=7)
    figures = result.summary()
    site.set_title(
        f"{spec.mode} mode, R = {spec.max_rps:g}/s: held {figures['held_fraction_of_limit']:.0%} of R after "
        f"{spec.settle_s:g} s, {figures['held_blocked_ratio']:.1%} blocked; back to P_d {spec.ceiling} "
        f"{figures['recovered_s']} s after the site relaxed",
        fontsize=9,
    )
    fleet.step(t, [s.concurrency for s in samples], where="post", color="tab:green", label="P_d")
    fleet.set_ylabel("P_d")
    fleet.set_ylim(0, spec.ceiling + 1)
    delay = fleet.twinx()
    delay.step(t, [s.delay_ms for s in samples], where="post", color="tab:orange", label="delay (ms)")
    delay.set_ylabel("delay (ms)")
    delay.set_yscale("log")
    delay.yaxis.set_major_formatter(ticker.FormatStrFormatter("%d"))
    delay.yaxis.set_minor_formatter(ticker.NullFormatter())
    fleet.set_xlabel("seconds since the job was submitted")
    for axes in (site, fleet):
        axes.axvspan(spec.blocking_s, t[-1] if t else spec.blocking_s, color="tab:green", alpha=0.07)
    site.text(spec.blocking_s + 1, spec.max_rps * 1.2, "site relaxed (anti-bot off)", fontsize=8)
    handles = fleet.get_legend_handles_labels()[0] + delay.get_legend_handles_labels()[0]
    fleet.legend(handles, [h.get_label() for h in handles], loc="lower right", fontsize=7)


def load(series: Path) -> LoopResult:
    """A run written by this script (its ``.json``), to plot again."""
    data = json.loads(series.read_text())
    fields = set(Sample.__dataclass_fields__)
    samples = [Sample(**{k: v for k, v in row.items() if k in fields}) for row in data["samples"]]
    return LoopResult(LoopSpec(**data["spec"]), samples)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--out", type=Path, default=Path("throttle_loop"), help="path prefix of .png and .json"
    )
    parser.add_argument("--max-rps", type=float, default=LoopSpec.max_rps)
    parser.add_argument("--blocking-s", type=float, default=LoopSpec.blocking_s)
    parser.add_argument("--relaxed-s", type=float, default=LoopSpec.relaxed_s)
    parser.add_argument("--mode", choices=("429", "captcha"), default=LoopSpec.mode)
    parser.add_argument(
        "--retry-after", type=int, default=LoopSpec.retry_after_s, help="a 429's Retry-After; 0: none"
    )
    parser.add_argument("--tuned", action="store_true", help="6 s windows, 1 s steps: the second row")
    parser.add_argument(
        "--cooldown-base-ms",
        type=int,
        help="a second row: one cooldown after any block without Retry-After, not the per-outcome defaults",
    )
    parser.add_argument(
        "--probe-backoff-max",
        type=int,
        help="a second row: failed probes onto a known limit wait up to recovery_s x 2^this (shipped: 2)",
    )
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--combine", type=Path, nargs="+", help="plot these runs' .json together into --out's .png; no run"
    )
    args = parser.parse_args()
    if args.combine:
        plot([load(path) for path in args.combine], args.out.with_suffix(".png"))
        print(f"wrote {args.out.with_suffix('.png')}")
        return
    spec = replace(
        LoopSpec(), max_rps=args.max_rps, blocking_s=args.blocking_s, relaxed_s=args.relaxed_s,
        mode=args.mode, retry_after_s=args.retry_after, tuned=args.tuned,
        cooldown_base_ms=args.cooldown_base_ms, probe_backoff_max=args.probe_backoff_max,
    )  # fmt: skip
    with tempfile.TemporaryDirectory() as work_dir:
        settings = loop_settings(Settings.from_env(), spec, Path(work_dir))
        try:
            result = run_loop(settings, spec, Path(work_dir), on_sample=None if args.json else _echo)
        finally:
            drop_namespace(settings)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    png, series = args.out.with_suffix(".png"), args.out.with_suffix(".json")
    plot([result], png)
    summary = result.summary()
    rows = {"summary": summary, "spec": asdict(spec), "samples": result.rows()}
    series.write_text(json.dumps(rows, indent=1))
    if args.json:
        print(json.dumps({**summary, "png": str(png), "series": str(series)}, indent=2))
        return
    s = summary
    held = f"{s['held_rate']} requests/s against R = {spec.max_rps:g} ({s['held_fraction_of_limit']:.0%})"
    blocked = f"{s['held_blocked']} of {s['held_requests']} blocked ({s['held_blocked_ratio']:.1%})"
    print(f"\n{spec.label}, {s['mode']}, R = {spec.max_rps:g}/s")
    print(f"held (after the first {spec.settle_s:g} s of the block): {held}, {blocked}, "
          f"{s['held_over_s']} s over the limit")  # fmt: skip
    print(f"500 pages served after {s['pages_500_s']} s; {s['crawl_blocked']} of {s['crawl_requests']} "
          f"requests blocked until then ({s['crawl_blocked_ratio']:.1%})")  # fmt: skip
    print(f"back to P_d {spec.ceiling}, delay {spec.delay_ms} ms {s['recovered_s']} s after the site "
          f"relaxed (ended at P_d {s['end_concurrency']}, delay {s['end_delay_ms']} ms)")  # fmt: skip
    print(f"wrote {png} and {series}")


def _echo(sample: Sample, last: list[str] = []) -> None:  # noqa: B006 (the last reason shown)
    print(sample.line(), flush=True)
    if sample.reason and sample.reason not in last:
        print(f"         {sample.reason}", flush=True)
        last[:] = [sample.reason]


if __name__ == "__main__":
    main()
