"""Extraction: from a raw page's bytes to links and (with the page record) structured data.

Its face (what callers import, each name loaded on first use, see :mod:`core.faces`): one page's
record (``extract_record``, the schema versions it writes, ``SiteTrust`` to learn from a site's pages), a
saved page read back, the plugin interface and its loader, and the error a page's extraction raises.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dualplane.core.faces import lazy_faces

if TYPE_CHECKING:
    from dualplane.data_plane.extract.exceptions import ExtractError
    from dualplane.data_plane.extract.offline import saved_page
    from dualplane.data_plane.extract.plugins import Extractor, load_extractor
    from dualplane.data_plane.extract.record import SCHEMA_VERSIONS, extract_record
    from dualplane.data_plane.extract.text.site_trust import SiteTrust

__all__ = [
    "SCHEMA_VERSIONS",
    "ExtractError",
    "Extractor",
    "SiteTrust",
    "extract_record",
    "load_extractor",
    "saved_page",
]
FACES = {
    "ExtractError": "exceptions",
    "Extractor": "plugins",
    "SCHEMA_VERSIONS": "record",
    "SiteTrust": "text.site_trust",
    "extract_record": "record",
    "load_extractor": "plugins",
    "saved_page": "offline",
}
__getattr__ = lazy_faces(__name__, FACES)
