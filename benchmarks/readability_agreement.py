"""Does a readability chooser raise the article body? Against which truth? A measurement, not a feature.

    .venv/bin/python benchmarks/readability_agreement.py            # dev and test, about 2 minutes
    .venv/bin/python benchmarks/readability_agreement.py --json

The full reference bodies of ``extraction_quality.py`` (its token and 4-gram rows) are mozilla/readability's
test pages, and their truth is readability.js's own output; the segment row is trafilatura's evaluation
pages, whose with/without segments people marked. This script scores, on both, in one run:

- ``ours``: the record's article body, or its main text (the benchmark's "ours");
- ``readability``: the readability port trafilatura ships (``trafilatura.readability_lxml``), its
  summary's text with one line per block element;
- ``agreement``: readability's text where the two agree on most words (at least ``--ours-in`` of our
  words are in it and at least ``--theirs-in`` of its words are in ours), else ours: the chooser that
  moved the full-body rows most on dev;
- ``best possible``: per page, whichever of ours and readability scores higher against the full
  reference body (needs the truth, so no extractor can do it; an upper bound for any chooser of two).

The question it answers: whether a chooser toward readability finds article text people mark as article
text, or only agrees more with the program that wrote the full-body truth.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from extract_pages import dataset, extract_one
from lxml import html as lxml_html
from real_pages import Tally
from scoring import overlap_prf, token_prf, tokens
from trafilatura.readability_lxml import Document

BLOCKS = frozenset({
    "p", "div", "li", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "td", "tr", "br",
    "section", "article", "figcaption", "dd", "dt",
})  # fmt: skip
ROWS = (
    ("article_body_token", "token F1, full bodies (readability.js's output)"),
    ("article_body_shingle", "4-gram F1, same pages"),
    ("article_body_segments", "segment F1, with/without (marked by people)"),
)


def readability_text(html: str) -> str:
    """The text of readability's summary of ``html``, a line per block element ("" when it fails)."""
    try:
        summary = lxml_html.fromstring(Document(lxml_html.fromstring(html)).summary())
        for element in summary.iter():
            if isinstance(element.tag, str) and element.tag in BLOCKS:
                element.tail = "\n" + (element.tail or "")
        text = summary.text_content()
    except Exception:  # lxml and the port raise many kinds on odd pages: then there is no text
        return ""
    return "\n".join(" ".join(line.split()) for line in text.splitlines() if line.strip())


def shares(ours: str | None, theirs: str) -> tuple[float, float]:
    """The share of our words found in theirs, and of theirs found in ours (as bags of words)."""
    mine_in_theirs, theirs_in_mine, _ = overlap_prf(tokens(theirs), tokens(ours))
    return mine_in_theirs, theirs_in_mine


def measure(split: str, ours_in: float, theirs_in: float) -> dict[str, dict[str, Any]]:
    tallies = {name: Tally() for name in ("ours", "readability", "agreement", "best possible")}
    for page in dataset(split, ("articles",)):
        record = extract_one(page, 3)
        ours = (record["article"] or {}).get("body") or record["text"]
        theirs = readability_text(page["html"])
        mine_in_theirs, theirs_in_mine = shares(ours, theirs)
        agreed = theirs if mine_in_theirs >= ours_in and theirs_in_mine >= theirs_in else ours
        truth = page["truth"].get("body")
        best = ours
        if truth and token_prf(truth, theirs)[2] > token_prf(truth, ours)[2]:
            best = theirs
        bodies = {"ours": ours, "readability": theirs, "agreement": agreed, "best possible": best}
        for name, body in bodies.items():
            tallies[name].add(page, {"body": body, "ms": 0.0})
    return {name: tally.report() for name, tally in tallies.items()}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sets", default="dev,test", help="comma-separated splits (default dev,test)")
    parser.add_argument("--ours-in", type=float, default=0.9, help="agreement: share of our words in theirs")
    parser.add_argument("--theirs-in", type=float, default=0.85, help="agreement: share of theirs in ours")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args()
    report = {split: measure(split, args.ours_in, args.theirs_in) for split in args.sets.split(",")}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    for split, systems in report.items():
        print(f"{split} split, F1 (agreement: ours-in {args.ours_in}, theirs-in {args.theirs_in})")
        print(f"  {'':<48}" + "".join(f"{name:>15}" for name in systems))
        for key, label in ROWS:
            print(f"  {label:<48}" + "".join(f"{scores[key]['f1']:>15.3f}" for scores in systems.values()))


if __name__ == "__main__":
    main()
