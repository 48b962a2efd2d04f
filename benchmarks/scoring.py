"""Scores shared by the extraction benchmarks: field precision/recall/F1 and text overlap measures."""

from __future__ import annotations

import re
import statistics
from collections import Counter
from dataclasses import dataclass
from typing import Any

SHINGLE_WORDS = 4


@dataclass
class Score:
    """Counts for one field; ``precision``, ``recall`` and ``f1`` from them."""

    tp: int = 0
    fp: int = 0
    fn: int = 0

    def add(self, truth: Any, found: Any) -> None:
        if truth is None:
            self.fp += found is not None
        elif found is None:
            self.fn += 1
        elif found == truth:
            self.tp += 1
        else:
            self.fp, self.fn = self.fp + 1, self.fn + 1

    def report(self) -> dict[str, float]:
        precision = self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0
        recall = self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        return {"precision": round(precision, 4), "recall": round(recall, 4), "f1": round(f1, 4)}


def mean_prf(values: list[tuple[float, float, float]]) -> dict[str, float]:
    """Per-page (precision, recall, F1) triples averaged, as main-text benchmarks report them."""
    if not values:
        return {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    precision, recall, f1 = (statistics.fmean(column) for column in zip(*values, strict=True))
    return {"precision": round(precision, 4), "recall": round(recall, 4), "f1": round(f1, 4)}


def tokens(text: str | None) -> Counter[str]:
    """Lower-cased words of ``text`` as a bag."""
    return Counter(re.findall(r"\w+", (text or "").lower()))


def shingles(text: str | None, size: int = SHINGLE_WORDS) -> Counter[tuple[str, ...]]:
    """Overlapping runs of ``size`` lower-cased words: order-aware, so shuffled or repeated text costs."""
    words = re.findall(r"\w+", (text or "").lower())
    if len(words) < size:
        return Counter([tuple(words)]) if words else Counter()
    return Counter(tuple(words[i : i + size]) for i in range(len(words) - size + 1))


def overlap_prf(expected: Counter[Any], got: Counter[Any]) -> tuple[float, float, float]:
    """Precision, recall and F1 of the multiset ``got`` against ``expected``."""
    overlap = sum((expected & got).values())
    if not overlap:
        return 0.0, 0.0, 0.0
    precision, recall = overlap / sum(got.values()), overlap / sum(expected.values())
    return precision, recall, 2 * precision * recall / (precision + recall)


def token_prf(truth: str, found: str | None) -> tuple[float, float, float]:
    """Bag-of-words overlap of ``found`` with ``truth``."""
    return overlap_prf(tokens(truth), tokens(found))


def shingle_prf(truth: str, found: str | None) -> tuple[float, float, float]:
    """Overlap of word 4-grams of ``found`` with those of ``truth``."""
    return overlap_prf(shingles(truth), shingles(found))
