"""Creating archive objects in S3 exactly once: whole or not at all, and never over an existing one.

An object appears under its final key only complete: one PUT for a small file, a multipart upload
(completed last) for a large one, so a killed sink leaves at most an incomplete multipart upload,
which no listing shows (:meth:`ArchiveStore.abort_stale_uploads` and the lifecycle rule in the README
remove those). Every create is conditional (``If-None-Match: *``): if the key is taken, by a run that
crashed after its upload but before its commit or by a zombie instance that lost its partitions,
:class:`~connectors.sink.exceptions.KeyTaken` is raised and the sink adopts that object instead of
replacing it. Each object's metadata says which offsets it holds (``first-offset``, ``last-offset``).

Errors are sorted once, here: a missing bucket, refused credentials or no permission raise
:class:`~connectors.sink.exceptions.SinkMisconfigured` naming the setting; anything else S3 does
raises :class:`~connectors.sink.exceptions.SinkUnavailable` (retry later).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import IO, TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from dualplane.connectors.sink.exceptions import KeyTaken, SinkMisconfigured, SinkUnavailable
from dualplane.connectors.storage import s3

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_s3.type_defs import CompletedPartTypeDef

log = logging.getLogger(__name__)

BUCKET_SETTING = "DUALPLANE_SINK_BUCKET"
TAKEN_CODES = frozenset({"PreconditionFailed", "412", "ConditionalRequestConflict"})


class ArchiveStore:
    """The sink's bucket: conditional creates, single or multipart, and reading back object metadata."""

    def __init__(
        self, client: S3Client, bucket: str, *, multipart_threshold_bytes: int, part_bytes: int
    ) -> None:
        self.client = client
        self.bucket = bucket
        self.multipart_threshold_bytes = multipart_threshold_bytes
        self.part_bytes = part_bytes

    def __repr__(self) -> str:
        return f"ArchiveStore(bucket={self.bucket!r})"

    def check(self) -> None:
        """Fail now, naming the setting to fix, if the bucket is missing or the credentials cannot use it."""
        try:
            self.client.head_bucket(Bucket=self.bucket)
        except (ClientError, BotoCoreError) as error:
            raise self._error(error, f"check bucket {self.bucket!r}") from error

    def create(
        self, key: str, stream: IO[bytes], size_bytes: int, *, content_type: str, metadata: Mapping[str, str]
    ) -> None:
        """Create ``key`` from ``stream`` (read from its start) unless it exists: :class:`KeyTaken` then."""
        stream.seek(0)
        try:
            if size_bytes < self.multipart_threshold_bytes:
                self.client.put_object(
                    Bucket=self.bucket,
                    Key=key,
                    Body=stream.read(),
                    IfNoneMatch="*",
                    ContentType=content_type,
                    Metadata=dict(metadata),
                )
            else:
                self._multipart(key, stream, content_type, metadata)
        except ClientError as error:
            if s3.error_code(error) in TAKEN_CODES:
                raise KeyTaken(key) from error
            raise self._error(error, f"write s3://{self.bucket}/{key}") from error
        except BotoCoreError as error:
            raise self._error(error, f"write s3://{self.bucket}/{key}") from error

    def metadata(self, key: str) -> dict[str, str]:
        """The user metadata of object ``key`` (``first-offset``, ``last-offset``...)."""
        try:
            return dict(self.client.head_object(Bucket=self.bucket, Key=key)["Metadata"])
        except (ClientError, BotoCoreError) as error:
            raise self._error(error, f"read s3://{self.bucket}/{key}") from error

    def abort_stale_uploads(self, prefix: str, older_than: timedelta) -> int:
        """Abort multipart uploads under ``prefix`` begun longer ago than ``older_than`` (killed sinks')."""
        cutoff = datetime.now(UTC) - older_than
        aborted = 0
        try:
            listing = self.client.list_multipart_uploads(Bucket=self.bucket, Prefix=prefix)
            for upload in listing.get("Uploads", []):
                if upload["Initiated"] < cutoff:
                    self.client.abort_multipart_upload(
                        Bucket=self.bucket, Key=upload["Key"], UploadId=upload["UploadId"]
                    )
                    aborted += 1
        except (ClientError, BotoCoreError) as error:  # housekeeping only: the lifecycle rule is the backstop
            log.warning("s3-sink: could not clean up stale multipart uploads: %s", error)
        return aborted

    def _multipart(self, key: str, stream: IO[bytes], content_type: str, metadata: Mapping[str, str]) -> None:
        upload_id = self.client.create_multipart_upload(
            Bucket=self.bucket, Key=key, ContentType=content_type, Metadata=dict(metadata)
        )["UploadId"]
        try:
            parts: list[CompletedPartTypeDef] = []
            while chunk := stream.read(self.part_bytes):
                number = len(parts) + 1
                part = self.client.upload_part(
                    Bucket=self.bucket, Key=key, UploadId=upload_id, PartNumber=number, Body=chunk
                )
                parts.append({"ETag": part["ETag"], "PartNumber": number})
            self.client.complete_multipart_upload(
                Bucket=self.bucket,
                Key=key,
                UploadId=upload_id,
                MultipartUpload={"Parts": parts},
                IfNoneMatch="*",
            )
        except BaseException:
            self._abort(key, upload_id)
            raise

    def _abort(self, key: str, upload_id: str) -> None:
        try:
            self.client.abort_multipart_upload(Bucket=self.bucket, Key=key, UploadId=upload_id)
        except (ClientError, BotoCoreError) as error:  # S3 is failing anyway: the lifecycle rule cleans up
            log.warning("s3-sink: could not abort the multipart upload of %s: %s", key, error)

    def _error(self, error: Exception, action: str) -> SinkMisconfigured | SinkUnavailable:
        line = s3.explain(error, action=action, bucket=self.bucket, bucket_setting=BUCKET_SETTING)
        if s3.is_permanent(error) or (action.startswith("check bucket") and _is_not_found(error)):
            return SinkMisconfigured(line)
        return SinkUnavailable(line)


def _is_not_found(error: Exception) -> bool:
    return isinstance(error, ClientError) and s3.error_code(error) in {"404", "NotFound", "NoSuchBucket"}
