"""Extraction quality on real pages (``extraction_quality.py --set dev|test``), next to the baselines.

Pages and ground truth come from ``benchmarks/data/`` (see its README). Systems, all on the same pages
in the same run:

- ``ours``: ``extract_record`` at ``--schema-version`` (the ``dualplane extract`` code path), run by
  ``extract_pages.py`` in a subprocess;
- ``before`` (with ``--baseline-ref REF``): the same, from the tree of git revision REF, in a second
  subprocess at the same time, so a change is scored and timed against what it replaces under the
  same machine load;
- ``trafilatura``: ``trafilatura.extract(html, url=url)`` with its defaults, alone;
- ``extruct``: structured data only (JSON-LD, microdata, RDFa, OpenGraph via extruct): a published
  ``articleBody``, and the product's offer fields.

Article body is our record's ``article.body``, or its main ``text`` when no article was recognised.
Two kinds of truth: a full reference body (token and word-4-gram F1 per page, averaged), and
"with"/"without" segments (a "with" segment found is a true positive, missed a false negative; a
"without" segment found a false positive; counts summed over pages, as trafilatura's evaluation does).
Product fields: a right value is a true positive, a wrong one a false positive and a false negative,
a missing one a false negative; the price is compared as a number, the currency on its own. The stock
states ``in_stock`` and ``out_of_stock`` are also scored each against the rest (a page said to be out of
stock that is not is a false positive of ``out_of_stock``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import trafilatura
from extract_pages import DATASETS, dataset, extract_one
from sample_site_quality import extruct_only
from scoring import Score, mean_prf, shingle_prf, token_prf

from dualplane.data_plane.extract.offline import raw_page

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("data_plane", "control_plane", "dualplane", "schemas", "connectors", "core", "brokers")
PRODUCT_FIELDS = ("price", "currency", "sku", "availability")
STOCK_STATES = ("in_stock", "out_of_stock")
"""Stock states also scored one against the rest: ``out_of_stock``'s precision is how often a page said to
be sold out really is (a wrong "sold out" drops a product from a shopper's view)."""
BASELINES = ("trafilatura", "extruct")
Output = dict[str, Any]  # {"body": str | None, "product": dict | None, "ms": float}


def ours(page: dict[str, Any], schema_version: int) -> Output:
    """Our extractor in this process (the benchmark itself runs it in a subprocess, see below)."""
    return _from_record(extract_one(page, schema_version))


def trafilatura_alone(page: dict[str, Any], _schema_version: int) -> Output:
    started = time.perf_counter()
    text = trafilatura.extract(page["html"], url=page["url"])
    return {"body": text, "product": None, "ms": (time.perf_counter() - started) * 1000}


def extruct_alone(page: dict[str, Any], _schema_version: int) -> Output:
    raw = raw_page(page["html"].encode("utf-8"), page["url"], fetched_at=raw_page_time(), charset="utf-8")
    started = time.perf_counter()
    product, article = extruct_only(raw)
    body = article.get("body") if article else None
    return {"body": body, "product": product, "ms": (time.perf_counter() - started) * 1000}


def raw_page_time() -> Any:
    from extract_pages import FETCHED_AT  # noqa: PLC0415

    return FETCHED_AT


def _from_record(found: dict[str, Any]) -> Output:
    article = found.get("article")
    body = (article or {}).get("body") or found.get("text")
    return {"body": body, "product": found.get("product"), "ms": found["ms"], "article": article is not None}


def subprocess_runs(args: argparse.Namespace) -> dict[str, dict[str, Output]]:
    """``ours`` and (with ``--baseline-ref``) ``before`` on the pages of ``args.split``."""
    command = ["--set", args.split, "--schema-version", str(args.schema_version)]
    command += ["--limit", str(args.limit)] if args.limit else []
    command += ["--only", args.only] if args.only else []
    command += [f"--id-prefix={prefix}" for prefix in args.id_prefix]
    return extractor_runs(args.baseline_ref, command)


def extractor_runs(baseline_ref: str | None, extract_args: list[str]) -> dict[str, dict[str, Output]]:
    """``ours`` and (with ``baseline_ref``) ``before``, each extracted by ``extract_pages.py`` (given
    ``extract_args``) in its own process, both at once: on a shared, noisy machine two concurrent runs
    see the same load, so their ms/page compare fairly. Outputs by system, then by page id."""
    with tempfile.TemporaryDirectory(prefix="dualplane-before-") as tree:
        trees = {"ours": str(REPO)}
        if baseline_ref:
            archive = subprocess.run(
                ["git", "-C", str(REPO), "archive", baseline_ref, *PACKAGES],
                check=True,
                capture_output=True,
            ).stdout
            subprocess.run(["tar", "-x", "-C", tree], input=archive, check=True)
            trees["before"] = tree
        command = [sys.executable, str(Path(__file__).with_name("extract_pages.py")), *extract_args]
        # Each writes to a file, not a pipe: a pipe read only after the other's is drained fills up and
        # stalls its writer, so the two ran one after the other (the same code timed 40% apart).
        files = {name: Path(tree, f"{name}.jsonl") for name in trees}
        running: dict[str, subprocess.Popen[str]] = {}
        for name, path in trees.items():
            with files[name].open("w", encoding="utf-8") as out:
                env = {**os.environ, "PYTHONPATH": path}
                running[name] = subprocess.Popen(command, env=env, stdout=out, text=True)
        for name, process in running.items():
            if process.wait() != 0:
                raise SystemExit(f"extract_pages.py failed for {name} (exit status {process.returncode})")
        outputs = {name: file.read_text(encoding="utf-8") for name, file in files.items()}
    return {
        name: {item["id"]: _from_record(_decimals(item)) for item in map(json.loads, lines.splitlines())}
        for name, lines in outputs.items()
    }


def _decimals(value: Any) -> Any:
    if isinstance(value, dict):
        return (
            Decimal(value["decimal"])
            if set(value) == {"decimal"}
            else {k: _decimals(v) for k, v in value.items()}
        )
    return [_decimals(item) for item in value] if isinstance(value, list) else value


class Tally:
    """One system's scores over the pages."""

    def __init__(self) -> None:
        self.body_token: list[tuple[float, float, float]] = []
        self.body_shingle: list[tuple[float, float, float]] = []
        self.segments = Score()
        self.fields = {name: Score() for name in PRODUCT_FIELDS}
        self.states = {state: Score() for state in STOCK_STATES}
        self.price_strings = Score()
        self.ms: list[float] = []
        self.articles_recognised = 0

    def add(self, page: dict[str, Any], output: Output) -> None:
        if page["kind"] == "prices":
            found = (output.get("product") or {}).get("price")
            self.price_strings.add(_number(page["amount"]), _number(found))
            return
        self.ms.append(output["ms"])
        self.articles_recognised += bool(output.get("article"))
        truth = page["truth"]
        if page["kind"] == "articles":
            self._body(truth, output.get("body"))
        else:
            self._product(truth, output.get("product") or {})

    def _body(self, truth: dict[str, Any], body: str | None) -> None:
        if truth.get("body"):
            self.body_token.append(token_prf(truth["body"], body))
            self.body_shingle.append(shingle_prf(truth["body"], body))
        if truth.get("with") is not None:
            text = " ".join((body or "").split())
            for segment in truth["with"]:
                found = " ".join(segment.split()) in text
                self.segments.tp += found
                self.segments.fn += not found
            self.segments.fp += sum(" ".join(segment.split()) in text for segment in truth["without"])

    def _product(self, truth: dict[str, Any], product: dict[str, Any]) -> None:
        for name in PRODUCT_FIELDS:
            expected, found = truth.get(name), product.get(name)
            if name == "price":
                expected, found = _number(expected), _number(found)
            self.fields[name].add(expected, found)
        # One stock state against all others: is a page said to be out of stock really out of stock?
        for state, score in self.states.items():
            said, meant = product.get("availability") == state, truth.get("availability") == state
            score.tp += said and meant
            score.fp += said and not meant
            score.fn += meant and not said

    def report(self) -> dict[str, Any]:
        report: dict[str, Any] = {
            "article_body_token": mean_prf(self.body_token),
            "article_body_shingle": mean_prf(self.body_shingle),
            "article_body_segments": self.segments.report(),
        }
        report |= {f"product_{name}": score.report() for name, score in self.fields.items()}
        report |= {f"availability_{state}": score.report() for state, score in self.states.items()}
        report["price_strings"] = self.price_strings.report()
        report["ms_per_page_median"] = round(statistics.median(self.ms), 2) if self.ms else None
        report["ms_per_page_mean"] = round(statistics.fmean(self.ms), 2) if self.ms else None
        report["articles_recognised"] = self.articles_recognised
        return report


def _number(value: Any) -> Decimal | None:
    if value is None:
        return None
    try:
        return Decimal(str(value)).normalize()
    except InvalidOperation:
        return None


def measure(args: argparse.Namespace) -> dict[str, Any]:
    systems: dict[str, Callable[[dict[str, Any], int], Output]] = {
        "trafilatura": trafilatura_alone, "extruct": extruct_alone,
    }  # fmt: skip
    extracted = subprocess_runs(args)
    tallies = {name: Tally() for name in [*extracted, *systems]}
    counts = dict.fromkeys(DATASETS, 0)
    names = (args.only,) if args.only else DATASETS
    for page in dataset(args.split, names, limit=args.limit, id_prefix=tuple(args.id_prefix)):
        counts[page["kind"]] += 1
        for name, system in systems.items():
            if page["kind"] != "prices":  # neither reads a price text on its own
                tallies[name].add(page, system(page, args.schema_version))
        for name, outputs in extracted.items():
            tallies[name].add(page, outputs[page["id"]])
    return {
        "set": args.split,
        "schema_version": args.schema_version,
        "baseline_ref": args.baseline_ref,
        "id_prefix": args.id_prefix,
        "pages": counts,
        **{name: tally.report() for name, tally in tallies.items()},
    }


ROWS = (
    ("article_body_token", "article body, token F1 (full reference)"),
    ("article_body_shingle", "article body, 4-gram F1 (full reference)"),
    ("article_body_segments", "article body, segment F1 (with/without)"),
    ("product_price", "product price"),
    ("product_currency", "product currency"),
    ("product_sku", "product sku"),
    ("product_availability", "product availability"),
    ("availability_in_stock", "  availability = in_stock (vs the rest)"),
    ("availability_out_of_stock", "  availability = out_of_stock (vs the rest)"),
    ("price_strings", "price strings (amount, price-parser's)"),
)


def print_report(report: dict[str, Any]) -> None:
    names = [name for name in ("ours", "before", "trafilatura", "extruct") if name in report]
    pages = report["pages"]
    print(
        f"extraction quality on real pages, {report['set']} split: {pages['articles']} article pages, "
        f"{pages['products']} product pages, {pages['prices']} price strings "
        f"(schema version {report['schema_version']}"
        + (f", before = {report['baseline_ref']})" if report["baseline_ref"] else ")")
    )
    print(f"  {'field (P / R / F1)':<42}" + "".join(f"{name:>24}" for name in names))
    for key, label in ROWS:
        cells = "".join(
            f"{'-' if key == 'price_strings' and name in BASELINES else _prf(report[name][key]):>24}"
            for name in names
        )
        print(f"  {label:<42}{cells}")
    for key in ("ms_per_page_median", "ms_per_page_mean"):
        print(f"  {key.replace('_', ' '):<42}" + "".join(f"{report[n][key]!s:>24}" for n in names))
    print(
        f"  {'pages recognised as articles':<42}"
        + "".join(f"{report[n]['articles_recognised']:>24}" for n in names)
    )


def _prf(score: dict[str, float]) -> str:
    return f"{score['precision']:.3f} / {score['recall']:.3f} / {score['f1']:.3f}"
