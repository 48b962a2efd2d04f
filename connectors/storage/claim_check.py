"""The claim-check store: page bodies too large for a Kafka message, kept in S3 by their SHA-256.

The fetcher writes a large body here *before* it produces the raw page that refers to it, so a
reference on ``pages.raw`` never dangles because of the order of writes; the extractor and replay
read it back. Keys are content-addressed (``claim-checks/sha256/<hex>``): refetching an unchanged
page stores nothing new, and a reference says which bytes it expects, so they are verified on read.

Lifetime: S3 lifecycle rules, not dualplane, delete old bodies, by age. Since a body is shared by every
raw page with the same bytes, its age would be that of its *first* reference, and an age rule could
expire it while a newer raw page still names it. So every reference refreshes it: when the body is
already stored but older than ``DUALPLANE_S3_CLAIM_CHECK_REFRESH_S`` (a day), ``put`` copies the object
onto itself, which resets its age, before the new raw page is produced. An object's age is therefore
never more than the refresh interval past its newest reference, and :func:`lifecycle_rule` (expire
after the longest retention of a topic holding references, plus the interval, plus a day) is safe.

Errors tell a permanent failure from a passing one: :class:`ClaimCheckMissing` and
:class:`ClaimCheckInvalid` will not heal (dead-letter the page), :class:`ClaimCheckUnavailable` may
(retry, and do not commit past the page). Settings: ``DUALPLANE_S3_*`` (endpoint, bucket, keys).
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from botocore.exceptions import BotoCoreError, ClientError, ParamValidationError

from dualplane.connectors.storage.exceptions import (
    ClaimCheckInvalid,
    ClaimCheckMissing,
    ClaimCheckTooLarge,
    ClaimCheckUnavailable,
)
from dualplane.core.settings import S3Settings

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

KEY_PREFIX = "claim-checks/sha256/"
MISSING_CODES = frozenset({"NoSuchKey", "NoSuchBucket", "404", "NotFound"})


@dataclass(frozen=True)
class ClaimCheck:
    """Where a body went: ``uri`` (``s3://bucket/key``), its SHA-256 (hex) and its length."""

    uri: str
    sha256: str
    size_bytes: int


class ClaimCheckStore:
    """Bodies in one S3 bucket under content-addressed keys; safe to share between threads."""

    def __init__(
        self,
        make_client: Callable[[], S3Client],
        bucket: str,
        *,
        ensure_bucket: Callable[[], Any] | None = None,
        refresh_after_s: float | None = None,
    ) -> None:
        self.bucket = bucket
        self.refresh_after_s = refresh_after_s
        self._make_client = make_client
        self._ensure_bucket = ensure_bucket
        self._client: S3Client | None = None
        self._lock = threading.Lock()  # boto3 builds clients thread-unsafely; build ours once

    @classmethod
    def from_settings(cls, s3_settings: S3Settings) -> ClaimCheckStore:
        """A store on the configured endpoint and bucket; nothing is contacted until first use."""

        def make_client() -> S3Client:
            from dualplane.connectors.storage import s3  # noqa: PLC0415 (boto3 loads slowly; pages under the limit never need it)

            return s3.client(s3_settings)

        def ensure_bucket() -> None:
            from dualplane.connectors.storage import s3  # noqa: PLC0415

            s3.ensure_bucket(s3_settings)

        return cls(
            make_client,
            s3_settings.bucket,
            ensure_bucket=ensure_bucket,
            refresh_after_s=s3_settings.claim_check_refresh_s,
        )

    def __repr__(self) -> str:
        return f"ClaimCheckStore(bucket={self.bucket!r})"

    @property
    def client(self) -> S3Client:
        with self._lock:
            if self._client is None:
                self._client = self._make_client()
            return self._client

    def put(self, body: bytes, sha256: str | None = None) -> ClaimCheck:
        """Store ``body`` (unless an object with its hash is there already) and return its reference.

        Returns only once S3 has the whole object. :class:`ClaimCheckUnavailable` when it could not
        be stored; the caller must then not publish a reference to it.
        """
        digest = sha256 or hashlib.sha256(body).hexdigest()
        key = f"{KEY_PREFIX}{digest}"
        check = ClaimCheck(f"s3://{self.bucket}/{key}", digest, len(body))
        try:
            stored = self._stored(key)
            same = stored is not None and stored[0] == len(body)  # a refetch of an unchanged page
            if same and (not self._stale(stored[1]) or self._refresh(key, digest)):  # type: ignore[index]
                return check  # kept, its age reset if it was getting old (see the module's docstring)
            self._put_object(key, body, digest)
        except (BotoCoreError, ClientError) as error:
            raise ClaimCheckUnavailable(
                f"could not store a {len(body)}-byte body at {check.uri}: {_describe(error)}; "
                "check DUALPLANE_S3_ENDPOINT_URL, DUALPLANE_S3_BUCKET and the credentials"
            ) from error
        return check

    def get(self, uri: str, *, max_bytes: int | None = None, sha256: str | None = None) -> bytes:
        """The body a reference names, checked against ``sha256`` when given.

        :class:`ClaimCheckTooLarge` (nothing downloaded) past ``max_bytes``; :class:`ClaimCheckMissing`
        when there is no such object; :class:`ClaimCheckInvalid` for a malformed reference or bytes
        that do not match; :class:`ClaimCheckUnavailable` when S3 cannot answer now.
        """
        bucket, key = parse_uri(uri)
        try:
            response = self.client.get_object(Bucket=bucket, Key=key)
            size_bytes = int(response["ContentLength"])
            if max_bytes is not None and size_bytes > max_bytes:
                response["Body"].close()
                raise ClaimCheckTooLarge(uri, size_bytes, max_bytes)
            body = response["Body"].read()
        except ClientError as error:
            if _code(error) in MISSING_CODES:
                raise ClaimCheckMissing(
                    f"claim check {uri} names no object ({_code(error)}): it was deleted, expired or "
                    "never written; refetch the page"
                ) from error
            raise ClaimCheckUnavailable(f"could not read claim check {uri}: {_describe(error)}") from error
        except ParamValidationError as error:  # e.g. an impossible bucket name: no retry will help
            raise ClaimCheckInvalid(f"claim check {uri!r} is not a valid S3 location: {error}") from error
        except BotoCoreError as error:
            raise ClaimCheckUnavailable(f"could not read claim check {uri}: {_describe(error)}") from error
        _verify(uri, body, sha256)
        return body

    def _stored(self, key: str) -> tuple[int, datetime] | None:
        """Size and last-modified time of ``key``, or None when there is no such object."""
        try:
            head = self.client.head_object(Bucket=self.bucket, Key=key)
        except ClientError as error:
            if _code(error) in MISSING_CODES:
                return None
            raise
        return int(head["ContentLength"]), head["LastModified"]

    def _stale(self, last_modified: datetime) -> bool:
        if self.refresh_after_s is None:
            return False
        return (datetime.now(UTC) - last_modified).total_seconds() >= self.refresh_after_s

    def _refresh(self, key: str, digest: str) -> bool:
        """Copy ``key`` onto itself, resetting its age; False when it vanished meanwhile (then store it)."""
        try:
            self.client.copy_object(
                Bucket=self.bucket,
                Key=key,
                CopySource={"Bucket": self.bucket, "Key": key},
                MetadataDirective="REPLACE",
                ContentType="application/octet-stream",
                Metadata={"sha256": digest, "referenced-at": datetime.now(UTC).isoformat()},
            )
        except ClientError as error:
            if _code(error) in MISSING_CODES:
                return False  # expired between HEAD and copy: the caller writes it again
            raise
        return True

    def _put_object(self, key: str, body: bytes, digest: str) -> None:
        def put() -> None:
            self.client.put_object(
                Bucket=self.bucket,
                Key=key,
                Body=body,
                ContentType="application/octet-stream",
                Metadata={"sha256": digest},
            )

        try:
            put()
        except ClientError as error:
            if _code(error) != "NoSuchBucket" or self._ensure_bucket is None:
                raise
            self._ensure_bucket()  # a fresh deployment: create the bucket once, then store
            put()


DAY_S = 86_400
DEAD_LETTER_RETENTION_S = (
    30 * DAY_S
)  # brokers.kafka.topics keeps dead letters (which carry references) 30 days


def lifecycle_rule(pages_raw_retention_ms: int, refresh_after_s: float) -> dict[str, Any] | None:
    """The S3 lifecycle rule that expires claim-checked bodies once no topic can still refer to them.

    Bodies are referenced from ``pages.raw`` and from dead letters; with refresh on reference an object
    is at most ``refresh_after_s`` older than its newest reference. None when ``pages.raw`` keeps data
    forever (retention -1): then no age is safe, and bodies must not expire.
    """
    if pages_raw_retention_ms < 0:
        return None
    longest_s = max(pages_raw_retention_ms / 1000, DEAD_LETTER_RETENTION_S)
    days = math.ceil(longest_s / DAY_S) + math.ceil(refresh_after_s / DAY_S) + 1
    return {
        "ID": "dualplane-claim-checks",
        "Filter": {"Prefix": KEY_PREFIX},
        "Status": "Enabled",
        "Expiration": {"Days": days},
        "NoncurrentVersionExpiration": {"NoncurrentDays": 1},  # versioned buckets: the copies' old versions
        "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1},
    }


def parse_uri(uri: str) -> tuple[str, str]:
    """``("bucket", "key")`` from ``s3://bucket/key``; :class:`ClaimCheckInvalid` for anything else."""
    parts = urlsplit(uri)
    key = parts.path.lstrip("/")
    if parts.scheme != "s3" or not parts.netloc or not key:
        raise ClaimCheckInvalid(f"claim check {uri!r} is not an s3://bucket/key reference")
    return parts.netloc, key


def _verify(uri: str, body: bytes, sha256: str | None) -> None:
    if sha256 is None:
        return
    actual = hashlib.sha256(body).hexdigest()
    if actual != sha256.lower():
        raise ClaimCheckInvalid(
            f"claim check {uri} holds {len(body)} bytes with SHA-256 {actual}, not the {sha256} the raw "
            "page expects: the object was overwritten or corrupted; refetch the page"
        )


def _code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def _describe(error: Exception) -> str:
    return f"{type(error).__name__}: {error}"
