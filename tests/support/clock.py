"""A clock for the sample site's changes that moves only when the test moves it."""

from __future__ import annotations


class ManualClock:
    """The site's time: ``now_s`` until the test sets another."""

    def __init__(self, now_s: float) -> None:
        self.now_s = now_s

    def __call__(self) -> float:
        return self.now_s
