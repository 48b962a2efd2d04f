"""Extraction quality: precision, recall and F1 per field, next to trafilatura-alone and extruct-alone.

    .venv/bin/python benchmarks/extraction_quality.py --set dev                    # real pages, dev split
    .venv/bin/python benchmarks/extraction_quality.py --set test --baseline-ref main  # before/after
    .venv/bin/python benchmarks/extraction_quality.py --set sample-site            # the synthetic site
    .venv/bin/python benchmarks/extraction_quality.py --set dev --only products --id-prefix onebox/

``dev`` and ``test`` score real pages with ground truth (``benchmarks/data/``, see its README;
``real_pages.py`` describes the measures); ``sample-site`` scores the generated sample site against
its own truth (``sample_site_quality.py``). Each prints ms/page of every system measured in the run.
"""

from __future__ import annotations

import argparse
import json
import logging

import real_pages
import sample_site_quality


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--set", dest="split", choices=("dev", "test", "sample-site"), default="dev")
    parser.add_argument("--schema-version", type=int, default=3, help="page_record version (default 3)")
    parser.add_argument("--baseline-ref", help="also score and time the extractor of this git revision")
    parser.add_argument("--limit", type=int, help="real pages: at most this many per dataset")
    parser.add_argument(
        "--only", choices=("articles", "products", "prices"), help="real pages: only this dataset"
    )
    parser.add_argument(
        "--id-prefix",
        action="append",
        default=[],
        help="real pages: only those whose id starts with this (repeatable; e.g. onebox/: pages added "
        "after the extractor's rules were written, so untouched by them)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    sample_site_quality.add_arguments(parser)
    args = parser.parse_args()
    logging.getLogger("trafilatura").setLevel(logging.ERROR)
    if args.split == "sample-site":
        sample_site_quality.run(args)
        return
    report = real_pages.measure(args)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        real_pages.print_report(report)


if __name__ == "__main__":
    main()
