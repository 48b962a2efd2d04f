"""The extractor stage: the service (pages.raw to records), replay, and the records readers.

Its face (what callers import, each name loaded on first use, see :mod:`core.faces`): the records
reader and the change-event reader downstream code follows, the replay call, the service and its
start-up checks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dualplane.core.faces import lazy_faces

if TYPE_CHECKING:
    from dualplane.data_plane.extractor.change_reader import ChangeEvent, iter_changes, latest_records
    from dualplane.data_plane.extractor.records import PageRecord, iter_records
    from dualplane.data_plane.extractor.replay import (
        ReplayResult,
    )
    from dualplane.data_plane.extractor.replay import (
        plan as plan_replay,
    )
    from dualplane.data_plane.extractor.replay import (
        replay as replay_pages,
    )
    from dualplane.data_plane.extractor.service import Extractor
    from dualplane.data_plane.extractor.startup_checks import configuration_problems

__all__ = [
    "ChangeEvent",
    "Extractor",
    "PageRecord",
    "ReplayResult",
    "configuration_problems",
    "iter_changes",
    "iter_records",
    "latest_records",
    "plan_replay",
    "replay_pages",
]
FACES = {
    "ChangeEvent": "change_reader",
    "Extractor": "service",
    "PageRecord": "records",
    "ReplayResult": "replay",
    "configuration_problems": "startup_checks",
    "iter_changes": "change_reader",
    "iter_records": "records",
    "latest_records": "change_reader",
    "plan_replay": "replay:plan",
    "replay_pages": "replay:replay",
}
__getattr__ = lazy_faces(__name__, FACES)
