"""The item number a product page hands its analytics tags: Tealium's ``utag_data.product_sku``.

Shops that print no item number often still pass it to their tag manager in a script: Tealium's data
layer names it ``product_sku`` (a list with the one product of a product page), and it is the shop's own
item number. Read last, only when no other source has one: a listing's data layer lists several (then
none is taken), and other analytics keys (``id``, ``prodid``) are as often a database id as a SKU.
"""

from __future__ import annotations

import re

from dualplane.data_plane.extract.product.identifiers import sku_of

MAX_SCRIPT_CHARS = 2_000_000
# product_sku: ["201500014845"] or product_sku: "201500014845" (object literal or JSON, quoted or not).
_PRODUCT_SKU = re.compile(
    r"""["']?product_sku["']?\s*:\s*(\[\s*(?:["'][^"'\]]{1,64}["']\s*,?\s*)*\]|["'][^"']{1,64}["'])"""
)
_QUOTED = re.compile(r"""["']([^"']+)["']""")


def tracked_sku(html: str) -> str | None:
    """The one item number the page's Tealium data layer names (``product_sku``), else ``None``."""
    if "product_sku" not in html:
        return None
    values = {
        value
        for match in _PRODUCT_SKU.finditer(html[:MAX_SCRIPT_CHARS])
        for value in _QUOTED.findall(match.group(1))
    }
    return sku_of(values.pop()) if len(values) == 1 else None
