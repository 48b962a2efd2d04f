"""The claim-check store: page bodies too large for a Kafka message, kept in S3 by their SHA-256.

The fetcher writes a large body here *before* it produces the raw page that refers to it, so a
reference on ``pages.raw`` never dangles because of the order of writes; the extractor and replay
read it back. Keys are content-addressed (``claim-checks/sha256/<hex>``): refetching an unchanged
page stores nothing new, and a reference says which bytes it expects, so they are verified on read.

Errors tell a permanent failure from a passing one: :class:`ClaimCheckMissing` and
:class:`ClaimCheckInvalid` will not heal (dead-letter the page), :class:`ClaimCheckUnavailable` may
(retry, and do not commit past the page). Settings: ``DUALPLANE_S3_*`` (endpoint, bucket, keys).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from botocore.exceptions import BotoCoreError, ClientError, ParamValidationError

from connectors.storage.exceptions import (
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
    ) -> None:
        self.bucket = bucket
        self._make_client = make_client
        self._ensure_bucket = ensure_bucket
        self._client: S3Client | None = None
        self._lock = threading.Lock()  # boto3 builds clients thread-unsafely; build ours once

    @classmethod
    def from_settings(cls, s3_settings: S3Settings) -> ClaimCheckStore:
        """A store on the configured endpoint and bucket; nothing is contacted until first use."""

        def make_client() -> S3Client:
            from connectors.storage import s3  # noqa: PLC0415 (boto3 loads slowly; pages under the limit never need it)

            return s3.client(s3_settings)

        def ensure_bucket() -> None:
            from connectors.storage import s3  # noqa: PLC0415

            s3.ensure_bucket(s3_settings)

        return cls(make_client, s3_settings.bucket, ensure_bucket=ensure_bucket)

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
            if self._stored_size(key) == len(body):
                return check  # same content, same key: a refetch of an unchanged page
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

    def _stored_size(self, key: str) -> int | None:
        try:
            head = self.client.head_object(Bucket=self.bucket, Key=key)
        except ClientError as error:
            if _code(error) in MISSING_CODES:
                return None
            raise
        return int(head["ContentLength"])

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
