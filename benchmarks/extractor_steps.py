"""The extractor service's own steps per page beside its extraction and trafilatura alone, on a crawl's pages.

    PYTHONPATH=. .venv/bin/python benchmarks/extractor_steps.py --real-sites rusty-machine,csveed --rounds 3

``crawl_vs_scrapy.py --peer-cpu`` reads ``dualplane_extract_cpu_seconds`` from a running extractor: the
extracting thread's CPU from the page's decoded raw record to its record produced (extraction, the Avro
encoding of the record, ``records.latest``'s snapshot and change check, the produce calls). This runs the
same steps in one process, step by step, on every HTML page of the real sites the crawl serves (built by
``real_sites.py --build-only``), so that what the service adds to extraction is seen apart from what
extraction costs on the crawl's pages: ``decode`` (the raw page's Avro, before the metric's clock),
``extract`` (:class:`~data_plane.extract.record.Extraction`, as the service calls it), ``encode`` (the
``page_record``'s Avro), ``snapshot`` (:meth:`~data_plane.extractor.changes.Snapshot.of`: the watched
values and the text's fingerprint), and ``trafilatura`` alone (``trafilatura.extract(html, url=url)``,
its defaults) on the same pages. CPU of this thread (``time.thread_time``), ms/page, medians of the
rounds. The produce calls hand bytes to librdkafka, whose threads the metric does not count.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from datetime import UTC, datetime
from typing import Any

import trafilatura
from real_sites import DEFAULT_CACHE_DIR

from dualplane import schemas
from dualplane.core.settings import Settings
from dualplane.data_plane.extract.offline import raw_page
from dualplane.data_plane.extract.record import Extraction, warm_up
from dualplane.data_plane.extractor.changes import Snapshot

STEPS = ("decode", "extract", "encode", "snapshot", "trafilatura")
FETCHED_AT = datetime(2026, 1, 1, tzinfo=UTC)


def encoded_pages(sites: list[str], codec: schemas.Codec, topic: str) -> list[bytes]:
    """Every HTML page of ``sites`` as the fetcher writes it to ``pages.raw`` (Avro bytes)."""
    found = []
    for site in sites:
        paths = sorted((DEFAULT_CACHE_DIR / site).rglob("*.html"))
        if not paths:
            raise SystemExit(
                f"no pages of {site} in {DEFAULT_CACHE_DIR}: run real_sites.py --build-only first"
            )
        for path in paths:
            url = f"http://{site}.invalid/{path.relative_to(DEFAULT_CACHE_DIR / site).as_posix()}"
            page = raw_page(path.read_bytes(), url, fetched_at=FETCHED_AT, charset="utf-8",
                            headers={"content-type": "text/html; charset=utf-8"})  # fmt: skip
            found.append(codec.encode("raw_page", page, topic=topic))
    return found


def one_round(pages: list[bytes], codec: schemas.Codec, settings: Settings, version: int) -> dict[str, float]:
    """CPU ms/page of each step over ``pages``: the service's steps page by page, then trafilatura alone."""
    extraction, spent = Extraction(), dict.fromkeys(STEPS, 0.0)
    for value in pages:
        started = time.thread_time()
        raw = codec.decode(value).record
        decoded = time.thread_time()
        record = extraction(raw, schema_version=version)
        extracted = time.thread_time()
        codec.encode("page_record", record, version, topic=settings.topics.records)
        encoded = time.thread_time()
        Snapshot.of(record)
        spent["decode"] += decoded - started
        spent["extract"] += extracted - decoded
        spent["encode"] += encoded - extracted
        spent["snapshot"] += time.thread_time() - encoded
    for value in pages:
        raw = codec.decode(value).record
        started = time.thread_time()
        trafilatura.extract(bytes(raw["body"]).decode("utf-8", "replace"), url=raw["url"])
        spent["trafilatura"] += time.thread_time() - started
    return {step: 1000 * seconds / len(pages) for step, seconds in spent.items()}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--real-sites", default="rusty-machine,csveed", help="sites of real_sites.py, comma-separated"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    settings = Settings.from_env()
    codec, version = schemas.codec_for(settings), schemas.latest_version("page_record")
    pages = encoded_pages(args.real_sites.split(","), codec, settings.topics.pages_raw)
    warm_up()
    trafilatura.extract("<html><body><p>warm-up</p></body></html>")
    rounds = [one_round(pages, codec, settings, version) for _ in range(args.rounds)]
    medians = {step: round(statistics.median(r[step] for r in rounds), 3) for step in STEPS}
    service = medians["extract"] + medians["encode"] + medians["snapshot"]
    report: dict[str, Any] = {
        "pages": len(pages),
        "rounds": [{step: round(ms, 3) for step, ms in r.items()} for r in rounds],
        "cpu_ms_per_page": medians,
        "extract_over_trafilatura": round(medians["extract"] / medians["trafilatura"], 3),
        "service_steps_over_trafilatura": round(service / medians["trafilatura"], 3),
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"{len(pages)} pages of {args.real_sites}, medians of {args.rounds} rounds, CPU ms/page")
    for step in STEPS:
        print(f"  {step:12} {medians[step]:8.3f}")
    print(f"  extraction / trafilatura alone: {report['extract_over_trafilatura']}")
    print(
        f"  extraction, encode and snapshot / trafilatura alone: {report['service_steps_over_trafilatura']}"
    )


if __name__ == "__main__":
    main()
