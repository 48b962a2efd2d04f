"""Progress and the bad-line report while ``dualplane crawl --seeds-file`` streams a seed list."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TransferSpeedColumn,
)

from dualplane.cli.output import stderr

if TYPE_CHECKING:  # crawl imports this module before it knows whether S3 (boto3) is needed
    from connectors.seeds import SeedList

UPDATE_EVERY = 1000  # seeds between redraws: a redraw per seed would cost more than the seed


@contextmanager
def seeding_progress(
    seed_list: SeedList | None, description: str = "seeding"
) -> Iterator[Callable[[int], None]]:
    """A bar of the list's bytes read (of its stored, maybe compressed, size) and the seeds so far.

    Yields the ``on_seed(count)`` callback to hand to ``submit_job``; a no-op without a seed list.
    """
    if seed_list is None:
        yield lambda _count: None
        return
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TextColumn("{task.fields[seeds]:,} seeds, {task.fields[bad]:,} bad lines"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=stderr, transient=True) as progress:
        bar = progress.add_task(description, total=None, seeds=0, bad=0)
        calls = 0

        def on_seed(_count: int) -> None:
            nonlocal calls
            calls += 1
            if calls % UPDATE_EVERY == 0:
                progress.update(bar, completed=seed_list.bytes_read, total=seed_list.total_bytes,
                                seeds=seed_list.seeds, bad=seed_list.bad)  # fmt: skip

        yield on_seed


def report_bad_lines(seed_list: SeedList | None) -> None:
    """One line with the count of bad lines, then the first few with their line numbers and reasons."""
    if seed_list is None or not seed_list.bad:
        return
    stderr.print(
        f"[yellow]{seed_list.bad:,} bad line(s)[/yellow] of {seed_list.lines:,} in {seed_list.location} "
        "were skipped:"
    )
    for bad in seed_list.bad_examples:
        stderr.print(f"  line {bad.number}: {bad.reason}: {bad.text!r}", markup=False, highlight=False)
