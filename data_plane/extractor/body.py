"""A raw page's body made ready to extract: read back from the claim-check store, and size-checked.

Pure apart from the store it is given, so the extractor service and replay resolve pages the same
way. A body over ``max_bytes`` is refused *before* any parsing, and a claim-checked one before it is
downloaded when the page says how large it is (``body_bytes``, raw_page v2): parsing takes about 1 s
and 35x the body in memory per MiB of HTML, so a 20 MiB page must not reach the parsers unasked.
Refusing (a dead letter naming the limit) beats extracting a truncated prefix: a record made from
part of a page looks complete downstream, while a dead letter keeps the page whole for a replay
with a higher limit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from dualplane.connectors.storage.exceptions import ClaimCheckInvalid, ClaimCheckMissing, ClaimCheckTooLarge
from dualplane.data_plane.extract.exceptions import ExtractionFailed, PageTooLarge

MIB = 1024 * 1024
LIMIT_SETTING = "DUALPLANE_EXTRACT_MAX_HTML_BYTES"


class BodyStore(Protocol):
    """Where claim-checked bodies are read from (:class:`connectors.storage.claim_check.ClaimCheckStore`)."""

    def get(self, uri: str, *, max_bytes: int | None = None, sha256: str | None = None) -> bytes:
        """The body ``uri`` names; raises the ``connectors.storage.exceptions.ClaimCheck*`` errors."""
        ...


def resolve_body(page: Mapping[str, Any], store: BodyStore | None, *, max_bytes: int) -> Mapping[str, Any]:
    """``page`` with its body inline, ready for :func:`~data_plane.extract.record.extract_record`.

    :class:`PageTooLarge` past ``max_bytes``; :class:`ExtractionFailed` for a reference that names
    no object, does not parse or holds other bytes than the page's ``body_sha256``.
    :class:`~connectors.storage.exceptions.ClaimCheckUnavailable` (S3 down, throttling) propagates: the page
    is fine, so the caller retries it rather than dead-lettering it.
    """
    where = str(page.get("final_url") or page.get("url") or "a raw page")
    body, reference = page.get("body"), page.get("claim_check")
    if body or not reference:  # inline; a malformed body is extract_record's to report
        if isinstance(body, bytes | bytearray | memoryview):
            _check_size(where, len(body), max_bytes)
        return page
    declared = page.get("body_bytes")
    if isinstance(declared, int):
        _check_size(where, declared, max_bytes)  # refused without downloading it
    if store is None:
        raise ExtractionFailed(f"{where} keeps its body at {reference}, and no claim-check store is given")
    try:
        body = store.get(str(reference), max_bytes=max_bytes, sha256=page.get("body_sha256"))
    except ClaimCheckTooLarge as error:
        raise _too_large(where, error.size_bytes, max_bytes) from error
    except (ClaimCheckMissing, ClaimCheckInvalid) as error:
        raise ExtractionFailed(f"{where}: {error}") from error
    return {**page, "body": body}


def _check_size(where: str, size_bytes: int, max_bytes: int) -> None:
    if size_bytes > max_bytes:
        raise _too_large(where, size_bytes, max_bytes)


def _too_large(where: str, size_bytes: int, max_bytes: int) -> PageTooLarge:
    return PageTooLarge(
        f"oversize: {size_bytes / MIB:.1f} MiB body of {where} exceeds the extraction limit of "
        f"{max_bytes / MIB:.1f} MiB; raise {LIMIT_SETTING} to extract it (dualplane replay re-extracts "
        "it without refetching)",
        size_bytes,
    )
