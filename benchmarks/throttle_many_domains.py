"""Many domains at once (issue #33): 45 healthy hosts beside 5 blocking at 2, 2, 5, 5 and 20 req/s.

Runs :mod:`tests.support.many_domains` (the frontier and a fetcher in this process, the Faust
processor as a child, every setting at its shipped default except P_d 8 and delay 0 so that the
sites' limits bind; one job crawling every page of the 50 hosts) for ``--duration-s`` and prints,
per blocking host, what it held from 30 s to the end against its limit and the share of its
requests it blocked; for the healthy hosts, their mean, lowest and highest rate and how many were
ever throttled. Needs the stack up (``dualplane stack up``).

    .venv/bin/python benchmarks/throttle_many_domains.py [--duration-s 90] [--healthy 45] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

from dualplane.core.settings import Settings
from dualplane.namespaces import drop_namespace

# Test harnesses live in the checkout's tests/support, not in the installed package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.support.many_domains import many_settings, run_many

SETTLE_S = 30


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--duration-s", type=float, default=90.0)
    parser.add_argument("--healthy", type=int, default=45)
    parser.add_argument(
        "--healthy-every-s", type=float, default=4.0,
        help="a page of each healthy host every this many seconds (0: all of them at once)",
    )  # fmt: skip
    parser.add_argument("--healthy-crawl-delay-s", type=float, default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work_dir:
        settings = many_settings(Settings.from_env(), Path(work_dir))
        try:
            series = run_many(
                settings,
                duration_s=args.duration_s,
                healthy=args.healthy,
                healthy_every_s=args.healthy_every_s or None,
                healthy_crawl_delay_s=args.healthy_crawl_delay_s,
            )
        finally:
            drop_namespace(settings)
    end_s = int(args.duration_s)
    rows = [row.summary(SETTLE_S, end_s) for row in series]
    blocking, healthy = [r for r in rows if r["max_rps"]], [r for r in rows if not r["max_rps"]]
    rates = [float(r["held_rps"]) for r in healthy]
    result = {
        "blocking": blocking,
        "healthy": {
            "hosts": len(healthy),
            "mean_rps": round(statistics.mean(rates), 2) if rates else None,
            "min_rps": min(rates, default=None),
            "max_rps": max(rates, default=None),
            "offered_rps": healthy[0]["offered_rps"] if healthy else None,
            "throttled": sum(1 for r in healthy if r["throttled"]),
        },
    }
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print(
        f"{'host':<24} {'R':>5} {f'held {SETTLE_S}-{end_s} s':>14} {'of R':>6} {'blocked':>8} {'min P_d':>8}"
    )
    for row in blocking:
        fraction = row["held_fraction"]
        ratio = row["blocked_ratio"]
        print(
            f"{row['url']:<24} {row['max_rps']:>5g} {row['held_rps']:>12.2f}/s {fraction:>6.0%} "
            f"{ratio if ratio is None else f'{ratio:.1%}':>8} {row['min_concurrency']:>8}"
        )
    print(f"healthy: {json.dumps(result['healthy'])}")


if __name__ == "__main__":
    main()
