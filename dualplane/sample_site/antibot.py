"""The anti-bot gate of one host: a sliding-window request counter judged against an AntiBot policy."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Literal

from dualplane.sample_site.spec import AntiBot

Verdict = Literal["pass", "429", "captcha"]


def window(policy: AntiBot) -> tuple[float, float]:
    """``(window_s, allowed)``: at most ``allowed`` requests in any ``window_s`` seconds."""
    if policy.max_rps >= 1:
        return 1.0, policy.max_rps
    return 1.0 / policy.max_rps, 1.0


class RateGate:
    """Decides, request by request, whether a host answers normally or blocks.

    Every request counts towards the window while a policy is active, blocked ones included, so a
    client that keeps hammering stays blocked until it backs off. In ``mixed`` mode blocked
    requests alternate between 429 and the captcha page, starting with 429.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._arrivals: deque[float] = deque()
        self._blocked = 0

    def judge(self, policy: AntiBot | None) -> Verdict:
        """Count one arriving request and say how to answer it under ``policy`` (None: always pass)."""
        if policy is None:
            return "pass"
        window_s, allowed = window(policy)
        now = self._clock()
        with self._lock:
            self._arrivals.append(now)
            while self._arrivals[0] <= now - window_s:
                self._arrivals.popleft()
            if len(self._arrivals) <= allowed:
                return "pass"
            self._blocked += 1
            if policy.mode == "mixed":
                return "429" if self._blocked % 2 else "captcha"
            return policy.mode

    def clear(self) -> None:
        """Forget past arrivals (the policy changed)."""
        with self._lock:
            self._arrivals.clear()
            self._blocked = 0
