"""A page's main text: the route that picks an engine (trafilatura, resiliparse, or the page's own
markup), the engine call with our trafilatura shortcuts (private, ``_trafilatura/``), the boilerplate cut
from the text, and the text's language. Reads no product, article or structured-data module."""

from __future__ import annotations
