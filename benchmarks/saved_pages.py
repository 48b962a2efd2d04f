"""Extract every saved page under some folders, the ``dualplane extract`` way, and report what broke.

    .venv/bin/python benchmarks/saved_pages.py ~/corpora/htmldate ~/corpora/webstruct
    .venv/bin/python benchmarks/saved_pages.py DIR --processes 2 --json

A robustness sweep over real pages nobody labelled: each ``*.htm``/``*.html`` file (gzipped or not) is
read as ``saved_page`` does (no HTTP header, so its charset comes from a BOM, its ``<meta>`` or a
UTF-8 check), turned into a ``page_record`` v3 by ``extract_record`` and encoded with the registered
schema, in worker processes, each page under a 60 s alarm. Reported:

- ``records``: pages that became a record that encodes;
- ``dead letters``: pages refused with a reason (``ExtractionFailed``), listed with the reason;
- ``crashes``: anything else, with its traceback's tail: each is a bug (the extractor service would
  dead-letter the page, but the extractor itself should have said why);
- CPU ms per page (``time.process_time`` of the worker): median, 99th percentile, max, slowest files;
- ``utf-8 under a legacy label``: files whose bytes are valid UTF-8 with non-ASCII text while their
  ``<meta>`` names a legacy charset, which ``core.web.charset`` reads as UTF-8 (mojibake before it).
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import sys
import time
import traceback
from multiprocessing import Pool
from pathlib import Path
from typing import Any

from rich.progress import Progress

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

PAGE_ALARM_S = 60
SUFFIXES = (".htm", ".html", ".htm.gz", ".html.gz")


def extract_file(path: str) -> dict[str, Any]:
    """Worker: one file's outcome (``record``, ``dead-letter`` or ``crash``), its CPU time and charset."""
    from w3lib.encoding import html_body_declared_encoding  # noqa: PLC0415

    from dualplane import schemas  # noqa: PLC0415
    from dualplane.core.web.charset import detect_charset  # noqa: PLC0415
    from dualplane.data_plane.extract.exceptions import ExtractionFailed  # noqa: PLC0415
    from dualplane.data_plane.extract.offline import saved_page  # noqa: PLC0415
    from dualplane.data_plane.extract.record import extract_record  # noqa: PLC0415

    signal.alarm(PAGE_ALARM_S)
    started = time.process_time()
    outcome: dict[str, Any] = {"path": path}
    try:
        page = saved_page(Path(path), url=f"https://saved.example/{Path(path).name}")
        schemas.encode("page_record", extract_record(page, schema_version=3), 3)
        outcome["outcome"] = "record"
        body: bytes = page["body"]
        declared = html_body_declared_encoding(body)
        outcome["relabelled"] = bool(declared) and detect_charset(None, body) == "utf-8" != declared
    except ExtractionFailed as failed:
        outcome |= {"outcome": "dead-letter", "reason": failed.reason}
    except BaseException:  # the point of the sweep: anything else is reported, not raised
        outcome |= {"outcome": "crash", "reason": traceback.format_exc()[-600:]}
    finally:
        signal.alarm(0)
    outcome["cpu_ms"] = (time.process_time() - started) * 1000
    return outcome


def saved_files(folders: list[Path]) -> list[str]:
    found = (path for folder in folders for path in folder.rglob("*") if path.is_file())
    return sorted(str(path) for path in found if path.name.lower().endswith(SUFFIXES))


def sweep(folders: list[Path], processes: int) -> dict[str, Any]:
    files = saved_files(folders)
    if not files:
        where = ", ".join(map(str, folders))
        raise SystemExit(f"no *.htm or *.html files under {where}: point at folders of saved pages")
    outcomes: list[dict[str, Any]] = []
    with Pool(processes) as pool, Progress(transient=True) as progress:
        task = progress.add_task("extracting", total=len(files))
        for outcome in pool.imap_unordered(extract_file, files, chunksize=4):
            outcomes.append(outcome)
            progress.advance(task)
    cpu = sorted(outcome["cpu_ms"] for outcome in outcomes)
    slowest = sorted(outcomes, key=lambda outcome: -outcome["cpu_ms"])[:5]
    return {
        "files": len(outcomes),
        "records": sum(outcome["outcome"] == "record" for outcome in outcomes),
        "dead_letters": [o for o in outcomes if o["outcome"] == "dead-letter"],
        "crashes": [o for o in outcomes if o["outcome"] == "crash"],
        "cpu_ms_median": round(statistics.median(cpu), 1),
        "cpu_ms_p99": round(cpu[min(len(cpu) - 1, int(len(cpu) * 0.99))], 1),
        "cpu_ms_max": round(cpu[-1], 1),
        "slowest": [{"path": o["path"], "cpu_ms": round(o["cpu_ms"], 1)} for o in slowest],
        "utf8_under_legacy_label": sorted(o["path"] for o in outcomes if o.get("relabelled")),
    }


def print_report(report: dict[str, Any]) -> None:
    print(f"saved pages: {report['files']} files, {report['records']} records, "
          f"{len(report['dead_letters'])} dead letters, {len(report['crashes'])} crashes")  # fmt: skip
    print(f"  CPU ms per page: median {report['cpu_ms_median']}, p99 {report['cpu_ms_p99']}, "
          f"max {report['cpu_ms_max']}")  # fmt: skip
    print(f"  utf-8 under a legacy <meta> label (read as UTF-8): {len(report['utf8_under_legacy_label'])}")
    for outcome in report["dead_letters"]:
        print(f"  dead letter {outcome['path']}: {outcome['reason']}")
    for outcome in report["crashes"]:
        print(f"  CRASH {outcome['path']}:\n{outcome['reason']}")
    for slow in report["slowest"]:
        print(f"  slow {slow['cpu_ms']:>8.1f} ms  {slow['path']}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("folders", nargs="+", type=Path, help="folders holding saved pages (searched deep)")
    parser.add_argument("--processes", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args()
    report = sweep(args.folders, args.processes)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)
    sys.exit(1 if report["crashes"] else 0)


if __name__ == "__main__":
    main()
