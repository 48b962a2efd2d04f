"""The fetcher stage: crawl tasks in from RabbitMQ, raw pages and fetch events out to Kafka.

Its face (what callers import, each name loaded on first use, see :mod:`core.faces`): the fetch
and the task runner the services run, the crawl profiles and their login sessions (``dualplane profile``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dualplane.core.faces import lazy_faces

if TYPE_CHECKING:
    from dualplane.control_plane.fetcher.exceptions import FetcherError
    from dualplane.control_plane.fetcher.profile_store import (
        delete as delete_profile,
    )
    from dualplane.control_plane.fetcher.profile_store import (
        put as put_profile,
    )
    from dualplane.control_plane.fetcher.profile_store import (
        read_profiles as read_profiles,
    )
    from dualplane.control_plane.fetcher.profiles import Profile, ProfileError
    from dualplane.control_plane.fetcher.runner import TaskRunner
    from dualplane.control_plane.fetcher.sessions import FormStep
    from dualplane.control_plane.fetcher.worker import Fetcher

__all__ = [
    "Fetcher",
    "FetcherError",
    "FormStep",
    "Profile",
    "ProfileError",
    "TaskRunner",
    "delete_profile",
    "put_profile",
    "read_profiles",
]
FACES = {
    "Fetcher": "worker",
    "FetcherError": "exceptions",
    "FormStep": "sessions",
    "Profile": "profiles",
    "ProfileError": "profiles",
    "TaskRunner": "runner",
    "delete_profile": "profile_store:delete",
    "put_profile": "profile_store:put",
    "read_profiles": "profile_store:read_profiles",
}
__getattr__ = lazy_faces(__name__, FACES)
