"""S3 clients built from settings, against AWS or any S3-compatible endpoint (MinIO, moto)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from dualplane.core.settings import S3Settings

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client


def client(s3: S3Settings, *, timeout_s: float = 10.0, retries: int = 3) -> S3Client:
    """A boto3 S3 client with path-style addressing (what MinIO and moto expect)."""
    config = Config(
        connect_timeout=timeout_s,
        read_timeout=timeout_s,
        retries={"max_attempts": retries, "mode": "standard"},
        s3={"addressing_style": "path"},
    )
    return boto3.client(
        "s3",
        endpoint_url=s3.endpoint_url,
        region_name=s3.region,
        aws_access_key_id=s3.access_key_id.get_secret_value(),
        aws_secret_access_key=s3.secret_access_key.get_secret_value(),
        config=config,
    )


def answers(s3: S3Settings, *, timeout_s: float = 2.0) -> bool:
    """True when the endpoint answers an authenticated ListBuckets right now."""
    try:
        client(s3, timeout_s=timeout_s, retries=1).list_buckets()
    except (BotoCoreError, ClientError):
        return False
    return True


def ensure_bucket(s3: S3Settings, bucket: str | None = None) -> str:
    """Create ``bucket`` (default: the configured one) unless it exists; return its name."""
    name = bucket or s3.bucket
    s3_client = client(s3)
    try:
        s3_client.head_bucket(Bucket=name)
    except ClientError:
        if s3.region == "us-east-1":  # the one region that rejects an explicit location
            s3_client.create_bucket(Bucket=name)
        else:
            s3_client.create_bucket(
                Bucket=name,
                CreateBucketConfiguration={"LocationConstraint": s3.region},  # type: ignore[typeddict-item]
            )
    return name


MISSING_BUCKET_CODES = frozenset({"NoSuchBucket"})
MISSING_KEY_CODES = frozenset({"NoSuchKey", "404", "NotFound"})
CREDENTIAL_CODES = frozenset(
    {"InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidClientTokenId", "InvalidToken", "ExpiredToken"}
)
DENIED_CODES = frozenset({"AccessDenied", "403", "AllAccessDisabled", "Forbidden"})
CREDENTIAL_SETTINGS = "DUALPLANE_S3_ACCESS_KEY_ID / DUALPLANE_S3_SECRET_ACCESS_KEY"


def error_code(error: ClientError) -> str:
    """The S3 error code of ``error`` (``NoSuchBucket``, ``AccessDenied``, ``403``...), or ``""``."""
    return str(error.response.get("Error", {}).get("Code", ""))


def is_permanent(error: Exception) -> bool:
    """True for failures no retry will heal: a missing bucket, bad credentials, no permission."""
    if not isinstance(error, ClientError):
        return False
    return error_code(error) in MISSING_BUCKET_CODES | CREDENTIAL_CODES | DENIED_CODES


def explain(
    error: Exception, *, action: str, bucket: str, bucket_setting: str = "DUALPLANE_S3_BUCKET"
) -> str:
    """One line saying why ``action`` on ``bucket`` failed and which setting to fix.

    ``action`` reads like "write s3://bucket/key"; ``bucket_setting`` is the variable that chose the bucket.
    """
    if isinstance(error, ClientError):
        code = error_code(error)
        if code in MISSING_BUCKET_CODES or (
            code in {"404", "NotFound"} and action.startswith("check bucket")
        ):
            return f"cannot {action}: bucket {bucket!r} does not exist; create it or fix {bucket_setting}"
        if code in CREDENTIAL_CODES:
            return f"cannot {action}: S3 refused the credentials ({code}); fix {CREDENTIAL_SETTINGS}"
        if code in DENIED_CODES:
            return (
                f"cannot {action}: access denied ({code}); grant these credentials ({CREDENTIAL_SETTINGS}) "
                f"access to bucket {bucket!r}, or fix {bucket_setting} to name a bucket they may use"
            )
        return f"cannot {action}: S3 answered {code or 'an error'}: {error}"
    if isinstance(error, BotoCoreError):
        return (
            f"cannot {action}: S3 did not answer ({type(error).__name__}: {error}); "
            "check DUALPLANE_S3_ENDPOINT_URL"
        )
    return f"cannot {action}: {type(error).__name__}: {error}"
