"""User-defined extractors: the ``Extractor`` interface, and plugins found through entry points.

A plugin is a class in any installed distribution, registered under the entry point group
``dualplane.extractors``::

    [project.entry-points."dualplane.extractors"]
    reviews = "dualplane_reviews:ReviewsExtractor"

For a page whose job or domain chose it (:class:`ExtractorChoice`), the built-in extraction runs as
always and the plugin's output goes into the record's ``data`` field (page_record v3), with
``extractor_version`` naming the plugin and its version: install a new version, replay, and the
records say which version made them. Plugins are loaded once per process, on first use.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from importlib.metadata import entry_points
from typing import Any, ClassVar

from selectolax.lexbor import LexborHTMLParser

from dualplane.data_plane.extract.exceptions import ExtractError, ExtractionFailed

ENTRY_POINT_GROUP = "dualplane.extractors"


@dataclass(frozen=True)
class PageView:
    """What a plugin reads: the page's URL and HTML, its parsed tree, and the built-in record so far."""

    url: str
    html: str
    record: Mapping[str, Any] = field(default_factory=dict)

    @cached_property
    def tree(self) -> LexborHTMLParser:
        """The page parsed by selectolax (Lexbor): ``page.tree.css("div.review")``."""
        return LexborHTMLParser(self.html)


class Extractor(ABC):
    """A user-defined extractor. Subclasses set ``name``, ``version`` and ``data_schema``.

    ``name`` is how jobs and the domain map choose it (its entry point's name); ``version`` goes into
    ``extractor_version`` (``"<name>/<version>"``), so bump it whenever its output changes;
    ``data_schema`` names the shape of its output (``"reviews/1"``) for downstream readers.
    """

    name: ClassVar[str]
    version: ClassVar[str]
    data_schema: ClassVar[str]

    @abstractmethod
    def extract(self, page: PageView) -> Mapping[str, Any] | None:
        """The page's data as a JSON-serialisable mapping, or ``None`` when the page holds none.

        Raising makes the page a dead letter naming this plugin (replay it once the plugin is fixed).
        """

    @property
    def label(self) -> str:
        return f"{self.name}/{self.version}"

    def data_of(self, page: PageView) -> dict[str, str] | None:
        """The page_record ``data`` value: ``{"schema", "json"}``; :class:`ExtractionFailed` on errors."""
        try:
            found = self.extract(page)
            return (
                None
                if found is None
                else {"schema": self.data_schema, "json": json.dumps(found, sort_keys=True)}
            )
        except Exception as error:  # a plugin's bug must dead-letter the page, not stop the worker
            raise ExtractionFailed(
                f"extractor plugin {self.label} failed on {page.url}: {type(error).__name__}: {error}"
            ) from error


def installed_extractors() -> dict[str, str]:
    """Names of the installed plugins and the ``module:class`` each entry point names."""
    return {point.name: point.value for point in entry_points(group=ENTRY_POINT_GROUP)}


def load_extractor(name: str) -> Extractor:
    """An instance of the plugin registered as ``name``; :class:`ExtractError` naming what is installed."""
    points = [point for point in entry_points(group=ENTRY_POINT_GROUP) if point.name == name]
    if not points:
        known = ", ".join(sorted(installed_extractors())) or "none"
        raise ExtractError(
            f"no extractor plugin {name!r} is installed (entry point group {ENTRY_POINT_GROUP}; installed: "
            f"{known}); pip install the package that provides it"
        )
    plugin = points[0].load()
    if not (isinstance(plugin, type) and issubclass(plugin, Extractor)):
        raise ExtractError(
            f"entry point {name} = {points[0].value} is not a subclass of {Extractor.__module__}.Extractor"
        )
    return plugin()


class ExtractorChoice:
    """Which plugin extracts a page: the one its job chose (raw page ``extractor``), else the one the
    domain map names for its domain or a parent domain, else none. Plugins are loaded once."""

    def __init__(
        self, by_domain: Mapping[str, str] | None = None, loader: Callable[[str], Extractor] = load_extractor
    ) -> None:
        self.by_domain = {domain.lower().strip("."): name for domain, name in (by_domain or {}).items()}
        self._loader = loader
        self._loaded: dict[str, Extractor] = {}

    def for_page(self, page: Mapping[str, Any]) -> Extractor | None:
        name = page.get("extractor") or self._by_domain(str(page.get("domain") or ""))
        if not name:
            return None
        if name not in self._loaded:
            try:
                self._loaded[name] = self._loader(name)
            except ExtractError as error:
                raise ExtractionFailed(str(error)) from error
        return self._loaded[name]

    def _by_domain(self, domain: str) -> str | None:
        labels = domain.lower().split(".")
        return next(
            (
                self.by_domain[".".join(labels[i:])]
                for i in range(len(labels))
                if ".".join(labels[i:]) in self.by_domain
            ),
            None,
        )
