"""What extraction could not keep, counted (Prometheus) rather than dropped in silence.

- bytes invalid in a page's charset (a lying or missing charset): the page is still extracted, those
  bytes become U+FFFD, and both the page and the characters made up are counted;
- links that cannot be crawled (``javascript:``, ``mailto:``, ``tel:``, ``data:`` …): left out of the
  record, counted by scheme (other schemes under ``other``, so the label stays small); the links
  sent to discovery are the fetcher's, which counts its own.

Counted per extraction, in whatever process extracts (the extractor service, replay, ``dualplane
extract``); a batch redone after an aborted transaction counts again, like the extractor's pages.
"""

from __future__ import annotations

from prometheus_client import Counter

LOSSY_DECODES = Counter(
    "dualplane_extract_lossy_decodes",
    "Pages whose body held bytes invalid in their charset (each became U+FFFD)",
)
REPLACED_CHARACTERS = Counter(
    "dualplane_extract_replaced_characters",
    "U+FFFD characters put in for bytes invalid in the page's charset",
)
SKIPPED_LINKS = Counter(
    "dualplane_extract_skipped_links",
    "Links left out because they cannot be crawled, by scheme",
    ["scheme"],
)
COUNTED_SCHEMES = frozenset({"javascript", "mailto", "tel", "data", "ftp", "file"})


def skipped_link(scheme: str) -> None:
    """Count one link left out for its ``scheme``."""
    SKIPPED_LINKS.labels(scheme if scheme in COUNTED_SCHEMES else "other").inc()


def lossy_decode(replaced: int) -> None:
    """Count a page whose decode made up ``replaced`` U+FFFD characters."""
    LOSSY_DECODES.inc()
    REPLACED_CHARACTERS.inc(replaced)
