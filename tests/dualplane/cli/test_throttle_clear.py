"""``dualplane throttle clear``: a domain, or ``*`` for the fleet-wide quota pause."""

from __future__ import annotations

import pytest

from dualplane.cli.throttle_cmd import clear_target
from dualplane.core.exceptions import DualplaneError

pytestmark = pytest.mark.unit


def test_star_clears_the_pause_of_every_domain() -> None:
    assert clear_target(" * ") == "*"


def test_a_domain_is_checked_as_before() -> None:
    assert clear_target("Shop.Example") == "shop.example"
    with pytest.raises(DualplaneError, match="not a URL"):
        clear_target("https://shop.example/")
    with pytest.raises(DualplaneError, match="is not a domain"):
        clear_target("*.example")
