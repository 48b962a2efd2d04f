"""The throttle feedback loop as a plot: the site's request rate and blocks against the fleet's limits.

Runs :mod:`dualplane.testing.anti_bot_loop` (the frontier and a fetcher in this process, the Faust processor
as a child, a sample-site host that blocks beyond ``--max-rps``; anti-bot off after ``--blocking-s``)
and writes the time series as JSON and a PNG: requests/s and blocked requests/s as the site counted
them, with its limit; below, P_d and the delay the fleet was running at. Prints the summary figures.
Needs the stack up (``dualplane stack up``).

    .venv/bin/python benchmarks/throttle_loop.py --out benchmarks/results/throttle_loop [--json]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from dataclasses import replace
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt

from core.settings import Settings
from dualplane.namespaces import drop_namespace
from dualplane.testing.anti_bot_loop import LoopResult, LoopSpec, Sample, loop_settings, run_loop


def plot(result: LoopResult, path: Path) -> None:
    """Two panels sharing time: what the site saw, and the limits the fleet ran at."""
    samples, spec = result.samples, result.spec
    t = [s.t_s for s in samples]
    figure, (site, fleet) = plt.subplots(2, 1, sharex=True, figsize=(10, 6.5), height_ratios=(3, 2))
    site.plot(t, [s.requests for s in samples], label="requests/s (site)", color="tab:blue")
    site.plot(t, [s.rate_10s for s in samples], label="10 s average", color="tab:blue", alpha=0.4)
    site.bar(t, [s.blocked for s in samples], width=0.8, label="blocked/s (429 or captcha)", color="tab:red")
    site.axhline(
        spec.max_rps, linestyle="--", color="black", linewidth=1, label=f"site limit R = {spec.max_rps:g}/s"
    )
    site.set_ylabel("per second")
    site.set_yscale("symlog", linthresh=10)
    site.legend(loc="upper left", fontsize=8)
    site.set_title("Adaptive throttling against the sample site's anti-bot mode")
    fleet.step(t, [s.concurrency for s in samples], where="post", color="tab:green", label="P_d")
    fleet.set_ylabel("P_d (concurrency)")
    fleet.set_ylim(0, spec.ceiling + 1)
    delay = fleet.twinx()
    delay.step(t, [s.delay_ms for s in samples], where="post", color="tab:orange", label="delay (ms)")
    delay.set_ylabel("delay between requests (ms)")
    fleet.set_xlabel("seconds since the job was submitted")
    for axes in (site, fleet):
        axes.axvspan(spec.blocking_s, t[-1] if t else spec.blocking_s, color="tab:green", alpha=0.07)
    site.text(spec.blocking_s + 1, spec.max_rps * 1.2, "site relaxed (anti-bot off)", fontsize=8)
    handles = fleet.get_legend_handles_labels()[0] + delay.get_legend_handles_labels()[0]
    fleet.legend(handles, [h.get_label() for h in handles], loc="lower right", fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


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
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    spec = replace(
        LoopSpec(), max_rps=args.max_rps, blocking_s=args.blocking_s, relaxed_s=args.relaxed_s, mode=args.mode
    )
    with tempfile.TemporaryDirectory() as work_dir:
        settings = loop_settings(Settings.from_env(), spec, Path(work_dir))
        try:
            result = run_loop(settings, spec, Path(work_dir), on_sample=None if args.json else _echo)
        finally:
            drop_namespace(settings)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    png, series = args.out.with_suffix(".png"), args.out.with_suffix(".json")
    plot(result, png)
    summary = result.summary()
    series.write_text(json.dumps({"summary": summary, "samples": result.rows()}, indent=1))
    if args.json:
        print(json.dumps({**summary, "png": str(png), "series": str(series)}, indent=2))
        return
    s = summary
    held = f"{s['held_rate']} requests/s against R = {spec.max_rps:g} ({s['held_fraction_of_limit']:.0%})"
    blocked = f"{s['held_blocked']} of {s['held_requests']} blocked ({s['held_blocked_ratio']:.1%})"
    print(f"\nheld (after the first {spec.settle_s:g} s of the block): {held}, {blocked}")
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
