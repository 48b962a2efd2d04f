"""The product area's own text: read from the heading on, without containers about other products."""

from __future__ import annotations

import pytest

from dualplane.data_plane.extract.markup import Markup
from dualplane.data_plane.extract.product.product_area import own_text

pytestmark = pytest.mark.unit

PAGE = (
    "<html><body><div id=area><p>Cart $5</p>{heading}<p>Our price $30</p>"
    "<div class=related><p>Other $9</p></div><p hidden>Sold out</p><!-- note --><p>Ships today</p></div>"
    "<p>Outside $1</p></body></html>"
)


def read(heading: str, **options: bool) -> str:
    tree = Markup(PAGE.format(heading=heading)).tree
    scope, name = tree.css_first("#area"), tree.css_first("h1")
    assert scope is not None
    return " | ".join(line for line in own_text(scope, name, **options).splitlines() if line)


def test_from_the_heading_on_without_related_items() -> None:
    assert read("<h1>Mug</h1>") == "Mug | Our price $30 | Sold out | Ships today"


def test_shown_leaves_hidden_elements_out() -> None:
    assert read("<h1>Mug</h1>", shown=True) == "Mug | Our price $30 | Ships today"


def test_a_heading_in_a_container_left_out_starts_the_reading_after_it() -> None:
    assert read("<nav><h1>Mug</h1><p>Menu</p></nav>") == "Our price $30 | Sold out | Ships today"


def test_without_a_heading_the_whole_scope_is_read() -> None:
    assert read("") == "Cart $5 | Our price $30 | Sold out | Ships today"


def test_a_heading_outside_the_scope_reads_nothing() -> None:
    tree = Markup("<html><body><h1>Mug</h1><div id=area><p>$30</p></div></body></html>").tree
    scope, name = tree.css_first("#area"), tree.css_first("h1")
    assert scope is not None
    assert own_text(scope, name) == ""
