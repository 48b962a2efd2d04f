"""Product identifiers: GTINs checked by their check digit, SKUs cleaned of labels and padding."""

from __future__ import annotations

import re

GTIN_LENGTHS = frozenset({8, 12, 13, 14})
MAX_SKU_CHARS = 64
_SKU = re.compile(r"[A-Za-z0-9][\w\-./#]*")
_LABEL = re.compile(
    r"^\s*(?:(?:sku|item|art(?:icle|ikel)?)\b[\s.\-]*(?:no|nr|number)?\.?\s*[:#]{1,2}|sku\s)\s*", re.I
)


def gtin_of(value: object) -> str | None:
    """``value`` as a GTIN-8/12/13/14 digit string when it is one (check digit verified), else ``None``."""
    digits = re.sub(r"[\s-]", "", str(value)) if isinstance(value, str | int) else ""
    if not digits.isdigit() or len(digits) not in GTIN_LENGTHS:
        return None
    body, check = digits[:-1], int(digits[-1])
    weighted = sum(
        int(digit) * (3 if position % 2 == 0 else 1) for position, digit in enumerate(reversed(body))
    )
    return digits if (10 - weighted % 10) % 10 == check else None


def sku_of(value: object) -> str | None:
    """A SKU as published, without a leading ``SKU:`` label; ``None`` when it is not one token."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        return None
    text = _LABEL.sub("", value).strip().removeprefix("#").strip()  # "#84682", as item numbers are shown
    match = _SKU.fullmatch(text)
    return match.group() if match and len(match.group()) <= MAX_SKU_CHARS else None
