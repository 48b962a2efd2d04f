"""The S3 sink stage: raw pages archived as WARC, records as Avro object container files, exactly once.

:class:`~connectors.sink.base.Sink` is the interface (what a stream consumes and how it writes a file);
:mod:`connectors.sink.warc` and :mod:`connectors.sink.avro` implement it; :mod:`connectors.sink.layout`
names and rotates files, :mod:`connectors.sink.upload` creates objects, :mod:`connectors.sink.session`
commits, and :class:`~connectors.sink.service.S3Sink` is the service ``dualplane run s3-sink`` runs.
``S3Sink`` is imported on first use, so reading the sink's lag (``dualplane status``) loads no boto3.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dualplane.connectors.sink.service import S3Sink

__all__ = ["S3Sink"]


def __getattr__(name: str) -> Any:
    if name == "S3Sink":
        from dualplane.connectors.sink.service import S3Sink  # noqa: PLC0415 (loaded on first use)

        return S3Sink
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
