"""What a page declares about itself: JSON-LD, microdata, RDFa and OpenGraph read into nodes, schema.org
Product and Article nodes mapped to product and article fields, and the head's title, description,
canonical URL and language."""

from __future__ import annotations
