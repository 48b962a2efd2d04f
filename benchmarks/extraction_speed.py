"""Extraction CPU per page, this tree against another git revision and trafilatura alone; equal records?

    .venv/bin/python benchmarks/extraction_speed.py --baseline-ref main --rounds 5
    .venv/bin/python benchmarks/extraction_speed.py --baseline-ref main --sets docs,large --rounds 5
    .venv/bin/python benchmarks/extraction_speed.py --baseline-ref main --sets sample-site --rounds 7
    .venv/bin/python benchmarks/extraction_speed.py --sets large --rounds 3 --json   # one JSON object

Pages: the real pages of ``data/`` (``dev`` and ``test`` splits: articles and product pages, each page
once), the large real pages (``docs``: NumPy's built documentation pages of 100 kB and more,
``data/docs_pages.jsonl.xz``; ``large``: the dev pages of 300 kB and more, news, blogs and shops), the
pages the crawl benchmark serves (``sites``: 100 of each real site of ``real_sites.py``, built in its cache
first with ``real_sites.py --build-only``) and
every HTML page a crawler reaches on the synthetic sample site (``sample_site_quality.pages``), made
once in this process and handed to every system. ``before`` and ``after`` are ``extract_record``
(page_record v3, the extractor service's code path) of one tree each, run in its own worker process
(``PYTHONPATH`` set to the tree), after its warm-up; ``trafilatura`` is ``trafilatura.extract(html,
url=url)`` alone, with its defaults, in a third worker. Rounds alternate: round 1 runs ``before``,
``after``, ``trafilatura``, round 2 the reverse, and so on, so none always meets the same load. A
round extracts every page of a set once and reports CPU ms/page of the worker (``time.process_time``,
so waiting for a core is not counted; the machine is shared and noisy, hence medians). The records of
the first round are compared field by field: a speed change that alters any record is no speed change.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("data_plane", "control_plane", "dualplane", "schemas", "connectors", "core", "brokers")
SETS = (
    "dev",
    "test",
    "docs",
    "large",
    "sites",
    "sample-site",
    "docsites-dev",
    "docsites-test",
    "docsites-test2",
    "docsites-test3",
    "docsites-test4",
)
LARGE_BYTES = 300_000
"""The ``large`` set: dev pages whose HTML holds at least this many bytes of UTF-8."""
SITE_PAGES = 100
DOC_SITE_PAGES = 40
"""The ``docsites-dev``, ``docsites-test``, ``docsites-test2`` ... ``docsites-test4`` sets: at most this
many pages of each documentation site of ``doc_sites.py`` in that split, spread evenly over its pages in
path order. Their report adds each site's figures (page ids start with the site's name)."""
"""The ``sites`` set: this many pages of each real site the crawl benchmark serves, spread evenly over its
pages in path order (the pages a crawl of ``crawl_vs_scrapy.py`` extracts, not pages chosen for size)."""
TRAFILATURA = "trafilatura"


def pages_of(name: str) -> dict[str, dict[str, Any]]:
    """Raw pages of set ``name`` by id: ``dev``/``test`` real pages, or the ``sample-site``'s pages."""
    from dualplane.data_plane.extract.offline import raw_page  # noqa: PLC0415 (the tree's own package)

    if name == "sample-site":
        import sample_site_quality  # noqa: PLC0415

        from dualplane.sample_site import SiteSpec  # noqa: PLC0415

        spec = SiteSpec(base_port=sample_site_quality.BASE_PORT)
        return dict(sample_site_quality.pages(spec))
    from extract_pages import DATA, FETCHED_AT, dataset, pages_file  # noqa: PLC0415

    if name == "sites":
        return _site_pages()
    if name.startswith("docsites-"):
        return _doc_site_pages(name.removeprefix("docsites-"))
    if name == "docs":
        found = pages_file(DATA / "docs_pages.jsonl.xz")
    elif name == "large":
        found = (page for page in dataset("dev", ("articles", "products")) if _large(page["html"]))
    else:
        found = dataset(name, ("articles", "products"))
    return {
        page["id"]: raw_page(page["html"].encode(), page["url"], fetched_at=FETCHED_AT, charset="utf-8")
        for page in found
    }


def _site_pages() -> dict[str, dict[str, Any]]:
    """``SITE_PAGES`` HTML pages of each real site of ``real_sites.py``, as built in its cache directory."""
    from real_sites import DEFAULT_CACHE_DIR, SITES  # noqa: PLC0415

    found: dict[str, dict[str, Any]] = {}
    for site in SITES:
        root = DEFAULT_CACHE_DIR / site.name
        paths = sorted(root.rglob("*.html"))
        if not paths:
            raise SystemExit(
                f"no pages of {site.name} in {root}: build them first with "
                f"`.venv/bin/python benchmarks/real_sites.py --build-only`"
            )
        found.update(_spread(site.name, root, paths, SITE_PAGES))
    return found


def _doc_site_pages(split: str) -> dict[str, dict[str, Any]]:
    """``DOC_SITE_PAGES`` HTML pages of each documentation site of ``doc_sites.py`` in ``split``."""
    from doc_sites import built  # noqa: PLC0415

    found: dict[str, dict[str, Any]] = {}
    for name, root in built(split).items():
        found.update(_spread(name, root, sorted(root.rglob("*.html")), DOC_SITE_PAGES))
    return found


def _spread(name: str, root: Path, paths: list[Path], count: int) -> dict[str, dict[str, Any]]:
    """``count`` of ``paths`` (below ``root``), evenly spread, as raw pages of host ``NAME.invalid``."""
    from extract_pages import FETCHED_AT  # noqa: PLC0415

    from dualplane.data_plane.extract.offline import raw_page  # noqa: PLC0415

    found = {}
    for path in paths[:: max(1, len(paths) // count)][:count]:
        relative = path.relative_to(root).as_posix()
        url = f"http://{name}.invalid/{relative}"
        found[f"{name}/{relative}"] = raw_page(path.read_bytes(), url, fetched_at=FETCHED_AT, charset="utf-8")
    return found


def _large(html: str) -> bool:
    return len(html.encode("utf-8")) >= LARGE_BYTES


def work(pages_file: Path, out_file: Path, keep_records: bool, system: str) -> None:
    """Worker: extract every page of ``pages_file`` once; write CPU ms/page (and the records)."""
    if system == TRAFILATURA:
        work_trafilatura(pages_file, out_file)
        return
    from dualplane.data_plane.extract.exceptions import ExtractionFailed  # noqa: PLC0415
    from dualplane.data_plane.extract.record import extract_record, warm_up  # noqa: PLC0415

    pages: dict[str, dict[str, Any]] = pickle.loads(pages_file.read_bytes())
    warm_up()
    # As the extractor service reads a crawl: one SiteTrust for the run, pages of a host in crawl order (a
    # tree without one, an older revision, reads each page alone).
    try:
        from dualplane.data_plane.extract.text.site_trust import SiteTrust  # noqa: PLC0415

        options: dict[str, Any] = {"sites": SiteTrust()}
    except ImportError:
        options = {}
    records: dict[str, Any] = {}
    page_ms: dict[str, float] = {}
    started = time.process_time()
    for key, page in pages.items():
        page_started = time.process_time()
        try:
            records[key] = extract_record(page, schema_version=3, **options)
        except ExtractionFailed as error:
            records[key] = ("failed", str(error))
        page_ms[key] = (time.process_time() - page_started) * 1000
    ms_per_page = (time.process_time() - started) * 1000 / len(pages)
    result = {"ms": ms_per_page, "page_ms": page_ms, "records": records if keep_records else None}
    out_file.write_bytes(pickle.dumps(result))


def work_trafilatura(pages_file: Path, out_file: Path) -> None:
    """Worker: ``trafilatura.extract`` alone (its defaults) on every page of ``pages_file``, once."""
    import trafilatura  # noqa: PLC0415

    pages: dict[str, dict[str, Any]] = pickle.loads(pages_file.read_bytes())
    htmls = {key: (page["body"].decode(page.get("charset") or "utf-8", "replace"), page["url"])
             for key, page in pages.items()}  # fmt: skip
    trafilatura.extract("<html><body><p>warm-up</p></body></html>")
    # As our warm_up does: jusText's set of trafilatura's merged stoplist, made on its first call (~70 ms).
    from justext.core import define_stoplist  # noqa: PLC0415
    from trafilatura import external  # noqa: PLC0415

    define_stoplist(external.JT_STOPLIST or external.jt_stoplist_init())
    page_ms: dict[str, float] = {}
    started = time.process_time()
    for key, (html, url) in htmls.items():
        page_started = time.process_time()
        trafilatura.extract(html, url=url)
        page_ms[key] = (time.process_time() - page_started) * 1000
    ms_per_page = (time.process_time() - started) * 1000 / len(pages)
    out_file.write_bytes(pickle.dumps({"ms": ms_per_page, "page_ms": page_ms, "records": None}))


def run_worker(
    tree: str, pages_file: Path, out_file: Path, keep_records: bool, system: str = "extract"
) -> dict[str, Any]:
    command = [sys.executable, __file__, "--worker", str(pages_file), str(out_file), "--system", system]
    command += ["--keep-records"] if keep_records else []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([tree, str(Path(__file__).parent)])}
    subprocess.run(command, env=env, check=True)
    result: dict[str, Any] = pickle.loads(out_file.read_bytes())
    return result


def differing(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Ids of pages whose records differ in any field but the extractor's version (or that only one
    system has): a version bump alone would otherwise list every page and hide the ones that changed."""
    return sorted(
        key
        for key in before.keys() | after.keys()
        if _unversioned(before.get(key)) != _unversioned(after.get(key))
    )


def _unversioned(record: Any) -> Any:
    return (
        {k: v for k, v in record.items() if k != "extractor_version"} if isinstance(record, dict) else record
    )


def cycled(pages: dict[str, dict[str, Any]], per_site: int) -> dict[str, dict[str, Any]]:
    """Each site's pages (ids ``SITE/PATH``) repeated in their order up to ``per_site`` pages, site after
    site: how a crawl of a larger site of the same template reads, for what learns per host."""
    sites: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for key, page in pages.items():
        sites.setdefault(key.split("/", 1)[0], []).append((key, page))
    found = {}
    for listed in sites.values():
        for index in range(per_site):
            key, page = listed[index % len(listed)]
            found[f"{key}#{index // len(listed)}"] = page
    return found


def measure(
    name: str, trees: dict[str, str], rounds: int, scratch: Path, cycle_to: int = 0
) -> dict[str, Any]:
    pages_file = scratch / f"{name}.pages"
    pages = pages_of(name)
    pages_file.write_bytes(pickle.dumps(cycled(pages, cycle_to) if cycle_to else pages))
    systems = [*trees, TRAFILATURA]
    ms: dict[str, list[float]] = {system: [] for system in systems}
    page_ms: dict[str, list[dict[str, float]]] = {system: [] for system in systems}
    records: dict[str, Any] = {}
    for index in range(rounds):
        for system in systems if index % 2 == 0 else reversed(systems):
            tree, kind = (trees[system], "extract") if system in trees else (trees["after"], system)
            result = run_worker(tree, pages_file, scratch / f"{system}.out", index == 0, kind)
            ms[system].append(result["ms"])
            page_ms[system].append(result["page_ms"])
            records.setdefault(system, result["records"])
    medians = {system: statistics.median(values) for system, values in ms.items()}
    return {
        **({"per_site": per_site(page_ms)} if name.startswith("docsites-") else {}),
        "pages": len(records["after"]),
        "ms_per_page": {system: [round(value, 2) for value in values] for system, values in ms.items()},
        "median_ms_per_page": {system: round(value, 2) for system, value in medians.items()},
        "after_over_before": round(medians["after"] / medians["before"], 3),
        "after_over_trafilatura": round(medians["after"] / medians[TRAFILATURA], 3),
        "differing_records": differing(records["before"], records["after"]),
    }


def per_site(page_ms: dict[str, list[dict[str, float]]]) -> dict[str, dict[str, Any]]:
    """Each site's pages (ids ``SITE/PATH``): CPU ms/page of each system, the median of its rounds, and
    after / trafilatura."""
    sites = sorted({key.split("/", 1)[0] for key in page_ms["after"][0]})
    found: dict[str, dict[str, Any]] = {}
    for site in sites:
        medians = {}
        for system, rounds in page_ms.items():
            means = [
                statistics.fmean(v for k, v in one.items() if k.startswith(f"{site}/")) for one in rounds
            ]
            medians[system] = round(statistics.median(means), 2)
        pages = sum(1 for key in page_ms["after"][0] if key.startswith(f"{site}/"))
        ratio = round(medians["after"] / medians[TRAFILATURA], 3)
        found[site] = {"pages": pages, "median_ms_per_page": medians, "after_over_trafilatura": ratio}
    return found


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--baseline-ref", default="main", help="git revision whose extractor is 'before'")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sets", default=",".join(SETS), help=f"comma-separated, of {SETS}")
    parser.add_argument("--json", action="store_true", help="print one JSON object of every set's figures")
    parser.add_argument(
        "--cycle-to", type=int, default=0, metavar="N",
        help="docsites sets: repeat each site's pages in order up to N pages (a larger site, labelled so)",
    )  # fmt: skip
    parser.add_argument("--worker", nargs=2, type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--keep-records", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--system", default="extract", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        work(*args.worker, keep_records=args.keep_records, system=args.system)
        return
    with tempfile.TemporaryDirectory(prefix="dualplane-speed-") as scratch:
        before = Path(scratch, "before")
        before.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", args.baseline_ref, *PACKAGES],
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(before)], input=archive, check=True)
        trees = {"before": str(before), "after": str(REPO)}
        reports: dict[str, Any] = {}
        for name in args.sets.split(","):
            report = reports[name] = measure(name, trees, args.rounds, Path(scratch), args.cycle_to)
            if args.json:
                continue
            changed, medians = report["differing_records"], report["median_ms_per_page"]
            print(
                f"{name}: {report['pages']} pages, CPU ms/page median of {args.rounds} rounds: "
                f"before ({args.baseline_ref}) {medians['before']}, after {medians['after']} "
                f"(x{report['after_over_before']}), trafilatura alone {medians[TRAFILATURA]} "
                f"(after / trafilatura x{report['after_over_trafilatura']}); rounds {report['ms_per_page']}; "
                f"records differing: {len(changed)}{' ' + ', '.join(changed[:10]) if changed else ''}",
                flush=True,
            )
            for site, figures in report.get("per_site", {}).items():
                site_medians = figures["median_ms_per_page"]
                print(
                    f"  {site:16} {figures['pages']:3} pages: before {site_medians['before']:7.2f}  after "
                    f"{site_medians['after']:7.2f}  trafilatura {site_medians[TRAFILATURA]:7.2f}  "
                    f"after / trafilatura x{figures['after_over_trafilatura']}",
                    flush=True,
                )
        if args.json:
            found = {"baseline_ref": args.baseline_ref, "rounds": args.rounds, "sets": reports}
            print(json.dumps(found, indent=2))


if __name__ == "__main__":
    main()
