"""Seed lists in S3 (``s3://bucket/key``), read as a stream: a 10M-line list never sits in memory."""

from __future__ import annotations

from typing import TYPE_CHECKING, BinaryIO, cast
from urllib.parse import urlsplit

from botocore.exceptions import BotoCoreError, ClientError

from dualplane.connectors.seeds.base import SeedSource
from dualplane.connectors.seeds.exceptions import SeedListError
from dualplane.connectors.storage import s3
from dualplane.core.settings import S3Settings

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client


class S3SeedSource(SeedSource):
    """One object on the configured endpoint (``DUALPLANE_S3_ENDPOINT_URL`` and credentials)."""

    def __init__(self, client: S3Client, bucket: str, key: str) -> None:
        self.client = client
        self.bucket = bucket
        self.key = key
        self.location = f"s3://{bucket}/{key}"

    @classmethod
    def from_uri(cls, uri: str, s3_settings: S3Settings) -> S3SeedSource:
        parts = urlsplit(uri)
        key = parts.path.lstrip("/")
        if parts.scheme != "s3" or not parts.netloc or not key:
            raise SeedListError(f"--seeds-file {uri!r} is not an s3://bucket/key location")
        return cls(s3.client(s3_settings, timeout_s=60.0), parts.netloc, key)

    def open(self) -> tuple[BinaryIO, int | None]:
        try:
            response = self.client.get_object(Bucket=self.bucket, Key=self.key)
        except ClientError as error:
            if s3.error_code(error) in s3.MISSING_KEY_CODES:
                raise SeedListError(f"cannot read seed list {self.location}: no such object") from error
            raise SeedListError(self._explain(error)) from error
        except BotoCoreError as error:
            raise SeedListError(self._explain(error)) from error
        # StreamingBody reads from the socket as asked: the object is never held whole.
        return cast(BinaryIO, response["Body"]), int(response["ContentLength"])

    def _explain(self, error: Exception) -> str:
        return s3.explain(error, action=f"read seed list {self.location}", bucket=self.bucket,
                          bucket_setting="--seeds-file")  # fmt: skip
