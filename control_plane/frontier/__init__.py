"""The frontier stage: discovery in, admitted crawl tasks out (see ``service``), and its face.

Callers (the shell, the demo, benchmarks, downstream code) import from this package only: the job
and monitor clients, the progress reader and the one rule for "a job is finished", the errors they
raise. Each name loads on first use (:mod:`core.faces`): readers of job progress (``dualplane
status``, ``crawl --wait``) load no AMQP or robots machinery.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dualplane.core.faces import lazy_faces

if TYPE_CHECKING:
    from dualplane.control_plane.frontier.client import JobClient, Look
    from dualplane.control_plane.frontier.exceptions import (
        CancelUnconfirmed,
        PauseUnconfirmed,
        ScopeTooWide,
        UnknownJob,
        UnknownMonitor,
    )
    from dualplane.control_plane.frontier.jobs import FinishRule, Verdict, eta_s, finished_count, remaining
    from dualplane.control_plane.frontier.monitor_client import MonitorClient
    from dualplane.control_plane.frontier.outcomes import job_outcomes
    from dualplane.control_plane.frontier.progress import ProgressReader
    from dualplane.control_plane.frontier.reshard import reshard as reshard_frontier
    from dualplane.control_plane.frontier.service import Frontier
    from dualplane.control_plane.frontier.sitemaps import SitemapProblem

__all__ = [
    "CancelUnconfirmed",
    "FinishRule",
    "Frontier",
    "JobClient",
    "Look",
    "MonitorClient",
    "PauseUnconfirmed",
    "ProgressReader",
    "ScopeTooWide",
    "SitemapProblem",
    "UnknownJob",
    "UnknownMonitor",
    "Verdict",
    "eta_s",
    "finished_count",
    "job_outcomes",
    "remaining",
    "reshard_frontier",
]
FACES = {
    "CancelUnconfirmed": "exceptions",
    "FinishRule": "jobs",
    "Frontier": "service",
    "JobClient": "client",
    "Look": "client",
    "MonitorClient": "monitor_client",
    "PauseUnconfirmed": "exceptions",
    "ProgressReader": "progress",
    "ScopeTooWide": "exceptions",
    "SitemapProblem": "sitemaps",
    "UnknownJob": "exceptions",
    "UnknownMonitor": "exceptions",
    "Verdict": "jobs",
    "eta_s": "jobs",
    "finished_count": "jobs",
    "job_outcomes": "outcomes",
    "remaining": "jobs",
    "reshard_frontier": "reshard:reshard",
}
__getattr__ = lazy_faces(__name__, FACES)
