"""Precision, recall and F1 with intervals that treat a site, not a page, as the unit of evidence.

Pages of one shop share a template: a rule right on one is right on all of them, so counting them as
independent draws makes an interval far too narrow. The bootstrap here resamples *sites* with
replacement (each drawn site brings all its pages) and reads the 2.5th and 97.5th percentiles of the
measure over the rounds: the spread to expect on a new set of shops of the same size, which is what a
held-out check of unseen shops is.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

ROUNDS = 1000
SEED = 35


@dataclass(frozen=True)
class Counts:
    """One page's (or a sum's) true positives, false positives and false negatives for one field."""

    tp: int = 0
    fp: int = 0
    fn: int = 0

    def __add__(self, other: Counts) -> Counts:
        return Counts(self.tp + other.tp, self.fp + other.fp, self.fn + other.fn)

    def prf(self) -> tuple[float, float, float]:
        precision = self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0
        recall = self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        return precision, recall, f1


def counts_of(truth: object, found: object) -> Counts:
    """A field compared on one page: right is a TP, wrong a FP and a FN, missing a FN, invented a FP."""
    if truth is None:
        return Counts(fp=int(found is not None))
    if found is None:
        return Counts(fn=1)
    return Counts(tp=1) if found == truth else Counts(fp=1, fn=1)


def with_intervals(
    pages: Iterable[tuple[str, Counts]], rounds: int = ROUNDS, seed: int = SEED
) -> dict[str, object]:
    """P/R/F1 of the summed counts, each with a site-bootstrap 95% interval, and the number of sites.

    ``pages`` are (site, counts) pairs, one per page.
    """
    by_site: dict[str, Counts] = defaultdict(Counts)
    for site, counts in pages:
        by_site[site] += counts
    sites = list(by_site.values())
    total = sum(sites, Counts())
    precision, recall, f1 = total.prf()
    draws: list[tuple[float, float, float]] = []
    rng = random.Random(seed)
    for _ in range(rounds if sites else 0):
        draws.append(sum(rng.choices(sites, k=len(sites)), Counts()).prf())
    return {
        "sites": len(sites),
        "tp": total.tp, "fp": total.fp, "fn": total.fn,
        "precision": round(precision, 4), "recall": round(recall, 4), "f1": round(f1, 4),
        "precision_95": _interval([d[0] for d in draws]),
        "recall_95": _interval([d[1] for d in draws]),
        "f1_95": _interval([d[2] for d in draws]),
    }  # fmt: skip


def _interval(values: list[float]) -> tuple[float, float] | None:
    if not values:
        return None
    ordered = sorted(values)
    low = ordered[int(0.025 * (len(ordered) - 1))]
    high = ordered[round(0.975 * (len(ordered) - 1))]
    return round(low, 4), round(high, 4)
