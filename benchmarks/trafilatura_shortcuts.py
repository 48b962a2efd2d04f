"""CPU ms/page of our calls of trafilatura with each of our shortcuts on and off, in one process.

    PYTHONPATH=. .venv/bin/python benchmarks/trafilatura_shortcuts.py --set large --rounds 5

The calls are those ``extract_record`` makes on the set's pages (``data_plane.extract.text.text``'s
``_trafilatura_text``: the article element's HTML, or the whole page), recorded once, then replayed:
each round times all of them with every shortcut of ``text.SHORTCUTS`` on, then with each one off in
turn (the others on), in an order that alternates between rounds so none always meets the same load.
Every replayed call must return the text it first returned. A shortcut's saving is the median, over
rounds, of (time without it - time with all), per page of the set (CPU time of this process; the machine
is shared, hence medians). ``extraction_speed.py`` judges a change as a whole, against trafilatura alone.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
from typing import Any

from extraction_speed import SETS, pages_of

from dualplane.data_plane.extract.record import extract_record, warm_up
from dualplane.data_plane.extract.text import text

ALL = "all on"


def recorded_calls(pages: list[dict[str, Any]]) -> list[tuple[str, str | None, str | None]]:
    """The (html, url) of each trafilatura call ``extract_record`` makes on ``pages``, and its text."""
    calls: list[tuple[str, str | None, str | None]] = []
    real = text._trafilatura_text

    def recording(html: str, url: str | None) -> str | None:
        result = real(html, url)
        calls.append((html, url, result))
        return result

    text._trafilatura_text = recording
    try:
        for page in pages:
            extract_record(page)
    finally:
        text._trafilatura_text = real
    return calls


def timed(calls: list[tuple[str, str | None, str | None]], off: str | None) -> float:
    """CPU seconds of all ``calls`` with shortcut ``off`` replaced by a no-op (none when ``None``)."""
    shortcuts = dict(text.SHORTCUTS)
    if off is not None:
        text.SHORTCUTS[off] = contextlib.nullcontext
    try:
        start = time.process_time()
        for html, url, expected in calls:
            if text._trafilatura_text(html, url) != expected:
                raise AssertionError(f"{url}: another text with {off or 'every shortcut'} off")
        return time.process_time() - start
    finally:
        text.SHORTCUTS.update(shortcuts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", default="large", choices=SETS)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    pages = list(pages_of(args.set).values())
    warm_up()
    calls = recorded_calls(pages)
    arms: list[str | None] = [None, *text.SHORTCUTS]
    seconds: dict[str | None, list[float]] = {arm: [] for arm in arms}
    for round_ in range(args.rounds):
        for arm in arms if round_ % 2 == 0 else arms[::-1]:
            seconds[arm].append(timed(calls, arm))
    per_page = 1000 / len(pages)
    print(f"{args.set}: {len(pages)} pages, {len(calls)} trafilatura calls, medians of {args.rounds} rounds")
    print(f"  {ALL}: {statistics.median(seconds[None]) * per_page:.2f} CPU ms/page")
    for arm in text.SHORTCUTS:
        saved = [off - on for off, on in zip(seconds[arm], seconds[None], strict=True)]
        print(
            f"  {arm} off: {statistics.median(seconds[arm]) * per_page:.2f} CPU ms/page;"
            f" it saves {statistics.median(saved) * per_page:.2f}"
        )


if __name__ == "__main__":
    main()
