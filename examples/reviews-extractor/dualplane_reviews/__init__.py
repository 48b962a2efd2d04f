"""An example extractor plugin: a product's star rating and review count, read with CSS rules.

Written for dualplane's sample site, whose product pages say "Rated 4.2 out of 5 (123 reviews)" in
``<p class="rating">``. ``RULES`` maps each output field to a CSS selector, a regular expression whose
first group is the value, and the value's type; change a rule, bump ``version``, reinstall, and
replay: the new records say ``reviews/<new version>`` in ``extractor_version``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from dualplane.data_plane.extract.plugins import Extractor, PageView

RULES: dict[str, tuple[str, str, Callable[[str], Any]]] = {
    "rating": ("p.rating", r"Rated ([\d.]+) out of 5", float),
    "reviews": ("p.rating", r"\((\d+) reviews?\)", int),
}


class ReviewsExtractor(Extractor):
    """Ratings and review counts of product pages; ``None`` for pages without a rating."""

    name = "reviews"
    version = "1.0.0"
    data_schema = "reviews/1"

    def extract(self, page: PageView) -> Mapping[str, Any] | None:
        found: dict[str, Any] = {}
        for field, (selector, pattern, kind) in RULES.items():
            node = page.tree.css_first(selector)
            match = re.search(pattern, node.text()) if node is not None else None
            if match:
                found[field] = kind(match.group(1).strip())
        return found if "rating" in found else None
