"""dualplane's Python API for downstream code: submit and follow crawls, monitors, read records.

One import for everything a program outside dualplane uses (see docs/python-api.md)::

    from dualplane.client import JobClient, iter_records, settings

    config = settings(namespace="demo")  # or None: $DUALPLANE_NAMESPACE, else the default topics
    spec, seeds = JobClient(config).crawl(["http://127.0.0.1:8000/"], max_pages=50)
    progress, verdict = JobClient(config).wait(spec.job_id, timeout_s=600)
    for record in iter_records(config, follow=False, job_id=spec.job_id):
        print(record.url, record.title)

Each name here is a stage's face (its package's ``FACES``); this module only gathers them and adds
:func:`settings`, which reads the environment as the CLI does.
"""

from __future__ import annotations

import os

from dualplane.brokers.amqp.messages import JobSpec, MonitorSpec
from dualplane.control_plane.frontier import (
    CancelUnconfirmed,
    FinishRule,
    JobClient,
    Look,
    MonitorClient,
    PauseUnconfirmed,
    ProgressReader,
    ScopeTooWide,
    UnknownJob,
    UnknownMonitor,
    Verdict,
)
from dualplane.core.settings import Settings
from dualplane.data_plane.extractor import (
    ChangeEvent,
    PageRecord,
    ReplayResult,
    iter_changes,
    iter_records,
    latest_records,
    plan_replay,
    replay_pages,
)
from dualplane.namespaces import named_namespace

NAMESPACE_ENV = "DUALPLANE_NAMESPACE"  # as the CLI's --namespace reads it

__all__ = [
    "CancelUnconfirmed",
    "ChangeEvent",
    "FinishRule",
    "JobClient",
    "JobSpec",
    "Look",
    "MonitorClient",
    "MonitorSpec",
    "PageRecord",
    "PauseUnconfirmed",
    "ProgressReader",
    "ReplayResult",
    "ScopeTooWide",
    "Settings",
    "UnknownJob",
    "UnknownMonitor",
    "Verdict",
    "iter_changes",
    "iter_records",
    "latest_records",
    "plan_replay",
    "replay_pages",
    "settings",
]


def settings(namespace: str | None = None) -> Settings:
    """The settings from the environment (``DUALPLANE_*``), in ``namespace`` if one is given, else in
    ``$DUALPLANE_NAMESPACE`` if set: the topics and queues the CLI would use. :class:`ValueError`
    for a name that is no namespace's."""
    name = namespace if namespace is not None else os.environ.get(NAMESPACE_ENV, "")
    config = Settings.from_env()
    return named_namespace(config, name) if name else config
