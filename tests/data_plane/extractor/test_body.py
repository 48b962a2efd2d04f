"""Resolving a raw page's body before extraction: inline or claim-checked, always within the limit.

The store here is a dict (this is pure logic); tests/connectors/storage/test_claim_check.py and
tests/e2e/test_large_pages.py run the same paths against the real S3 endpoint.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from dualplane.connectors.storage.exceptions import (
    ClaimCheckInvalid,
    ClaimCheckMissing,
    ClaimCheckTooLarge,
    ClaimCheckUnavailable,
)
from dualplane.data_plane.extract.exceptions import ExtractionFailed, PageTooLarge
from dualplane.data_plane.extractor.body import resolve_body

pytestmark = pytest.mark.unit

MIB = 1024 * 1024
URI = "s3://bucket/claim-checks/sha256/abc"


class DictStore:
    """Bodies by URI; records every read so a test can tell whether the store was asked at all."""

    def __init__(self, bodies: dict[str, bytes], error: Exception | None = None) -> None:
        self.bodies = bodies
        self.error = error
        self.reads: list[str] = []

    def get(self, uri: str, *, max_bytes: int | None = None, sha256: str | None = None) -> bytes:
        self.reads.append(uri)
        if self.error is not None:
            raise self.error
        if uri not in self.bodies:
            raise ClaimCheckMissing(f"claim check {uri} names no object (NoSuchKey)")
        body = self.bodies[uri]
        if max_bytes is not None and len(body) > max_bytes:
            raise ClaimCheckTooLarge(uri, len(body), max_bytes)
        if sha256 is not None and hashlib.sha256(body).hexdigest() != sha256:
            raise ClaimCheckInvalid(f"claim check {uri} holds other bytes")
        return body


def page(**fields: Any) -> dict[str, Any]:
    return {"url": "https://big.example/page", "body": b"<html>small</html>", "claim_check": None, **fields}


def test_an_inline_body_within_the_limit_is_left_as_it_is() -> None:
    store = DictStore({})
    original = page()

    assert resolve_body(original, store, max_bytes=MIB) is original
    assert store.reads == []


def test_a_claim_checked_body_is_read_back_and_verified() -> None:
    body = b"<html>" + b"x" * 5000 + b"</html>"
    referenced = page(body=b"", claim_check=URI, body_sha256=hashlib.sha256(body).hexdigest())

    resolved = resolve_body(referenced, DictStore({URI: body}), max_bytes=MIB)

    assert resolved["body"] == body and referenced["body"] == b""  # the input is not changed


def test_an_oversize_inline_body_is_refused_with_the_setting_to_raise() -> None:
    with pytest.raises(PageTooLarge) as failure:
        resolve_body(page(body=b"x" * (2 * MIB)), None, max_bytes=MIB)

    assert failure.value.reason.startswith("oversize: 2.0 MiB body of https://big.example/page exceeds")
    assert "raise DUALPLANE_EXTRACT_MAX_HTML_BYTES to extract it" in failure.value.reason
    assert failure.value.size_bytes == 2 * MIB


def test_an_oversize_claim_check_is_refused_without_downloading_it() -> None:
    store = DictStore({URI: b"x" * (20 * MIB)})

    with pytest.raises(PageTooLarge, match=r"oversize: 20\.0 MiB .* limit of 5\.0 MiB"):
        resolve_body(page(body=b"", claim_check=URI, body_bytes=20 * MIB), store, max_bytes=5 * MIB)
    assert store.reads == []


def test_an_oversize_claim_check_of_unknown_size_is_refused_by_the_store() -> None:
    store = DictStore({URI: b"x" * (3 * MIB)})

    with pytest.raises(PageTooLarge, match=r"oversize: 3\.0 MiB"):
        resolve_body(page(body=b"", claim_check=URI), store, max_bytes=MIB)  # v1 data: no body_bytes


@pytest.mark.parametrize(
    ("store", "reason"),
    [
        (DictStore({}), "names no object"),
        (DictStore({URI: b"other bytes"}), "holds other bytes"),
        (None, "no claim-check store is given"),
    ],
    ids=["dangling", "corrupt", "no-store"],
)
def test_an_unusable_reference_fails_the_page_with_a_reason(store: DictStore | None, reason: str) -> None:
    referenced = page(body=b"", claim_check=URI, body_sha256="0" * 64)

    with pytest.raises(ExtractionFailed, match=reason) as failure:
        resolve_body(referenced, store, max_bytes=MIB)
    assert failure.value.reason.startswith("https://big.example/page")
    assert not isinstance(failure.value, PageTooLarge)


def test_an_unavailable_store_is_not_a_page_failure() -> None:
    store = DictStore({}, error=ClaimCheckUnavailable("S3 did not answer"))

    with pytest.raises(ClaimCheckUnavailable):
        resolve_body(page(body=b"", claim_check=URI), store, max_bytes=MIB)
