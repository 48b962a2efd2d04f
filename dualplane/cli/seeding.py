"""Progress and the bad-line report while ``dualplane crawl --seeds-file`` streams a seed list."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
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
    from dualplane.connectors.seeds import SeedList

UPDATE_EVERY = 1000  # seeds between redraws: a redraw per seed would cost more than the seed


@dataclass(frozen=True)
class SeedingBar:
    """The ``on_seed(count)`` callbacks of the two passes over a seed list."""

    reading_domains: Callable[[int], None]  # for ``default_scope``: the list's domains, the job's scope
    seeding: Callable[[int], None]  # for the job client's ``submit``


@contextmanager
def seeding_progress(seed_list: SeedList | None) -> Iterator[SeedingBar]:
    """A bar of the list's bytes read (of its stored, maybe compressed, size) and the seeds so far, for
    each pass; on the way out, the bad lines the list had. No-ops without a seed list."""
    if seed_list is None:
        yield SeedingBar(lambda _count: None, lambda _count: None)
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
        bar = progress.add_task("", total=None, seeds=0, bad=0)

        def pass_of(description: str) -> Callable[[int], None]:
            calls = 0

            def on_seed(_count: int) -> None:
                nonlocal calls
                calls += 1
                if calls == 1:  # the pass starts: the bar says which
                    progress.update(bar, description=description)
                if calls % UPDATE_EVERY == 0:
                    progress.update(bar, completed=seed_list.bytes_read, total=seed_list.total_bytes,
                                    seeds=seed_list.seeds, bad=seed_list.bad)  # fmt: skip

            return on_seed

        yield SeedingBar(pass_of("reading the seed list's domains"), pass_of("seeding"))
    _report_bad_lines(seed_list)


def _report_bad_lines(seed_list: SeedList) -> None:
    """One line with the count of bad lines, then the first few with their line numbers and reasons."""
    if not seed_list.bad:
        return
    stderr.print(
        f"[yellow]{seed_list.bad:,} bad line(s)[/yellow] of {seed_list.lines:,} in {seed_list.location} "
        "were skipped:"
    )
    for bad in seed_list.bad_examples:
        stderr.print(f"  line {bad.number}: {bad.reason}: {bad.text!r}", markup=False, highlight=False)
