"""A product page's product: price, currency, availability, SKU and GTIN, brand and images, from the
sources in order of trust (structured data, the state JSON a page embeds, the markup around the title),
and the value parsers (prices, stock phrases, identifiers) that structured data reuses."""

from __future__ import annotations
