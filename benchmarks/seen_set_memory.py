"""Peak memory, insert rate and false-positive rate of the frontier's seen set at crawl scale.

Inserts N synthetic canonical URLs (as 16-byte url_keys) into a fresh SeenSet in a temporary
directory, in batches that are flushed like the frontier flushes before acking. With the
defaults the first 1M keys are exact (SQLite) and the rest go through the Bloom filter, so both
modes and the switch are measured. Then probes never-inserted URLs for the false-positive rate.

Goal from the frontier issue: 10M keys well under 200 MB of RSS.

    .venv/bin/python benchmarks/seen_set_memory.py --items 10000000 [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import sys
import tempfile
import time
from pathlib import Path

from dualplane.control_plane.frontier.seen import SeenSet
from dualplane.core.web.urls import url_key

LIMIT_BYTES = 200 * 1000 * 1000
BATCH = 10_000


def _status_kib(field: str) -> int | None:
    """A ``VmRSS``/``VmHWM`` figure from /proc/self/status, in KiB (Linux only)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_peak() -> bool:
    # Writing 5 to clear_refs resets VmHWM (Linux >= 4.0), so the peak counts only our work.
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def _peak_kib() -> int:
    hwm = _status_kib("VmHWM")
    if hwm is not None:
        return hwm
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak // 1024 if sys.platform == "darwin" else peak  # bytes on macOS, KiB elsewhere


def _model_false_positive_rate(items: int, expected_items: int, fp_rate: float) -> float:
    """The textbook rate of a Bloom filter sized for (expected_items, fp_rate) holding ``items``."""
    bits = -expected_items * math.log(fp_rate) / math.log(2) ** 2
    hashes = max(1, round(bits / expected_items * math.log(2)))
    return float((1 - math.exp(-hashes * items / bits)) ** hashes)


def _url(i: int) -> str:
    return f"https://site{i % 10_007}.example/section/{i // 10_007}/item-{i}?page={i % 13}"


def measure(
    *, items: int, probes: int, exact_limit: int, expected_items: int, fp_rate: float
) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="seen-bench-") as directory:
        path = Path(directory) / "seen.sqlite3"
        baseline_kib = _status_kib("VmRSS") or _peak_kib()
        peak_reset = _reset_peak()
        seen = SeenSet(
            path, exact_limit=exact_limit, expected_items=expected_items, false_positive_rate=fp_rate
        )
        started = time.perf_counter()
        new = 0
        for start in range(0, items, BATCH):
            new += sum(seen.add_many(url_key(_url(i)) for i in range(start, min(items, start + BATCH))))
            seen.flush()
            if start % 1_000_000 == 0:
                print(f"  {start:>11,} keys, {seen.mode} mode", file=sys.stderr, flush=True)
        insert_s = time.perf_counter() - started
        false_positives = sum(url_key(f"https://never.example/{i}") in seen for i in range(probes))
        peak_delta_bytes = max(0, _peak_kib() - baseline_kib) * 1024
        disk_bytes = sum(file.stat().st_size for file in Path(directory).iterdir())
        mode = seen.mode
        seen.close()
    return {
        "items": items,
        "new_keys": new,
        "mode": mode,
        "exact_limit": exact_limit,
        "expected_items": expected_items,
        "target_false_positive_rate": fp_rate,
        "peak_rss_delta_mb": round(peak_delta_bytes / 1e6, 1),
        "peak_measured_from_reset": peak_reset,
        "limit_mb": LIMIT_BYTES / 1e6,
        "ratio_to_limit": round(peak_delta_bytes / LIMIT_BYTES, 3),
        "insert_s": round(insert_s, 1),
        "inserts_per_s": round(items / insert_s),
        "probes": probes,
        "false_positive_rate": false_positives / probes if probes else None,
        "model_false_positive_rate": _model_false_positive_rate(items, expected_items, fp_rate),
        "disk_mb": round(disk_bytes / 1e6, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--items", type=int, default=10_000_000)
    parser.add_argument("--probes", type=int, default=100_000, help="never-inserted URLs to probe")
    parser.add_argument("--exact-limit", type=int, default=1_000_000)
    parser.add_argument("--expected-items", type=int, default=50_000_000)
    parser.add_argument("--false-positive-rate", type=float, default=0.001)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    figures = measure(
        items=args.items,
        probes=args.probes,
        exact_limit=args.exact_limit,
        expected_items=args.expected_items,
        fp_rate=args.false_positive_rate,
    )
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    print(f"seen set: {figures['items']:,} keys, ended in {figures['mode']} mode")
    print(
        f"peak RSS delta   {figures['peak_rss_delta_mb']} MB"
        f" (limit {figures['limit_mb']:.0f} MB, ratio {figures['ratio_to_limit']})"
    )
    print(f"inserts          {figures['inserts_per_s']:,}/s ({figures['insert_s']} s)")
    print(
        f"false positives  {figures['false_positive_rate']} on {figures['probes']:,} never-inserted URLs"
        f" (model {figures['model_false_positive_rate']:.2g} at this fill,"
        f" target {figures['target_false_positive_rate']} at {figures['expected_items']:,})"
    )
    print(f"on disk          {figures['disk_mb']} MB")


if __name__ == "__main__":
    main()
