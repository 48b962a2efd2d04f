"""What extraction could not keep, counted (Prometheus) rather than dropped in silence.

- bytes invalid in a page's charset (a lying or missing charset): the page is still extracted, those
  bytes become U+FFFD, and both the page and the characters made up are counted;
- main texts that could not be read: the text engine raised on the page (trafilatura and lxml on
  pathological markup); the record keeps its other fields, and the failure is counted by engine and
  error type instead of passing as an empty text;
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
TEXT_FAILURES = Counter(
    "dualplane_extract_text_failures",
    "Pages whose main text could not be read because the text engine raised, by engine and error type",
    ["engine", "error"],
)
COUNTED_SCHEMES = frozenset({"javascript", "mailto", "tel", "data", "ftp", "file"})


def skipped_link(scheme: str) -> None:
    """Count one link left out for its ``scheme``."""
    SKIPPED_LINKS.labels(scheme if scheme in COUNTED_SCHEMES else "other").inc()


def lossy_decode(replaced: int) -> None:
    """Count a page whose decode made up ``replaced`` U+FFFD characters."""
    LOSSY_DECODES.inc()
    REPLACED_CHARACTERS.inc(replaced)


def text_failed(engine: str, error: BaseException) -> None:
    """Count a page whose main text ``engine`` could not read (it raised ``error``)."""
    TEXT_FAILURES.labels(engine, type(error).__name__).inc()
