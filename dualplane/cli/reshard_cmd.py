"""``dualplane reshard --to N``: change the number of frontier shards of a stopped fleet."""

from __future__ import annotations

from typing import Annotated

import typer

from dualplane.cli.namespace import NamespaceOption, settings_in
from dualplane.cli.output import JsonOption, print_json, progress, stdout, table
from dualplane.control_plane.frontier import reshard_frontier


def reshard_command(
    to: Annotated[int, typer.Option("--to", min=1, help="The new number of frontier shards.")],
    as_json: JsonOption = False,
    namespace: NamespaceOption = None,
) -> None:
    """Move the frontier's state and queued discovery from DUALPLANE_QUEUE_FRONTIER_SHARDS shards to
    --to shards. Stop every frontier, fetcher and extractor first; afterwards start them all with
    DUALPLANE_QUEUE_FRONTIER_SHARDS set to the new count."""
    settings = settings_in(namespace)
    report = reshard_frontier(settings, to, progress=lambda message: progress("reshard", message))
    if as_json:
        print_json(report)
        return
    rows = [[kind, str(count)] for kind, count in sorted(report.moved_state.items())]
    rows += [
        ["changelog records written", str(report.changelog_records)],
        ["queued messages moved", str(report.messages_moved)],
        ["messages published", str(report.messages_published)],
        ["shard queues deleted", ", ".join(report.queues_deleted) or "-"],
    ]
    stdout.print(
        table(f"frontier shards {report.shards_before} -> {report.shards_after}", ["what", "count"], rows)
    )
    stdout.print(f"now start every service with DUALPLANE_QUEUE_FRONTIER_SHARDS={report.shards_after}")
