"""An article page's article: whether the page is one, its headline, authors, publication time and body,
from structured data first and the visible markup to fill gaps; dates as pages write them."""

from __future__ import annotations
