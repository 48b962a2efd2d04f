"""Settings of the connectors: the S3 sink (``DUALPLANE_SINK_*``) and seed lists (``DUALPLANE_SEEDS_*``)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator

from dualplane.core.settings.base import Section, section
from dualplane.core.settings.fields import OptionalBucketName

MIB = 1024 * 1024
SinkStream = Literal["warc", "avro"]
PartitionField = Literal["date", "job"]
GZIP_LEVELS = {"isal": (0, 3), "zlib": (1, 9)}
GZIP_DEFAULT_LEVELS = {"isal": 2, "zlib": 6}  # ISA-L's own default; zlib's usual one


class SinkSettings(Section):
    """The S3 sink (``connectors.sink``, ``dualplane run s3-sink``): what it archives, where, when files end.

    - ``bucket`` (``DUALPLANE_SINK_BUCKET``): where archives go; default ``DUALPLANE_S3_BUCKET``. It must
      exist: the sink never creates an archive bucket (its lifecycle and access are yours to set).
    - ``prefix`` (``DUALPLANE_SINK_PREFIX``): the first part of every key, ``archive`` by default:
      ``archive/topic=pages.raw/partition=3/pages.raw+3+0000012000.warc.gz``.
    - ``streams`` (``DUALPLANE_SINK_STREAMS``): ``warc`` (``pages.raw`` to WARC), ``avro`` (``records`` to
      Avro object container files), or both, comma-separated.
    - ``partition_by`` (``DUALPLANE_SINK_PARTITION_BY``): extra key levels, in order: ``date``
      (``date=2026-11-24``, from the record time) and ``job`` (``job=<job id>``). A file holds one value of
      each, so interleaved jobs make smaller files.
    - ``flush_records`` / ``max_file_bytes`` / ``rotate_interval_ms`` (``DUALPLANE_SINK_FLUSH_RECORDS``,
      ``..._MAX_FILE_BYTES``, ``..._ROTATE_INTERVAL_MS``): a file ends after this many records, once it
      reaches this size, or when the record time (the Kafka timestamp) enters the next aligned window of
      this length (0: no time rotation). All three follow the records, never the wall clock, so a re-run
      from the committed offsets cuts the same files.
    - ``idle_flush_s`` (``DUALPLANE_SINK_IDLE_FLUSH_S``): a partition that received nothing for this long
      has its open file written anyway (0: never), once the partition was read to its end, so the tail
      of a quiet topic reaches S3: 5 s by default, so the archive is complete within ~10 s of a crawl's
      end (``benchmarks/sink_throughput.py --lag``: 6-8 s; with 30 s it took 30 s and more). The one
      boundary set by the clock; safe because an object is created only if its key is free (see
      ``connectors.sink.upload``).
    - ``multipart_threshold_bytes`` / ``multipart_part_bytes``: files from this size are uploaded in parts.
    - ``avro_codec``: compression of Avro blocks.
    - ``gzip_engine`` / ``gzip_level`` (``DUALPLANE_SINK_GZIP_ENGINE``, ``..._GZIP_LEVEL``): how each WARC
      record is gzipped: ``isal`` (ISA-L, levels 0-3, default 2; several times faster, files ~10% larger)
      or ``zlib`` (levels 1-9, default 6).
    - ``retry_max_s``: the longest back-off between attempts while S3 (or Kafka) does not answer.
    - ``spool_dir``: where open files are kept until uploaded (default: the system temp directory).
    """

    model_config = section("SINK_")

    bucket: OptionalBucketName = None  # unset or empty: DUALPLANE_S3_BUCKET
    prefix: str = "archive"
    streams: str = "warc,avro"
    partition_by: str = ""
    flush_records: int = Field(default=10_000, ge=1)
    max_file_bytes: int = Field(default=256 * MIB, ge=1024)
    rotate_interval_ms: int = Field(default=3_600_000, ge=0)
    idle_flush_s: float = Field(default=5.0, ge=0)
    multipart_threshold_bytes: int = Field(default=16 * MIB, ge=5 * MIB)
    multipart_part_bytes: int = Field(default=8 * MIB, ge=5 * MIB)  # S3's minimum part size is 5 MiB
    avro_codec: Literal["null", "deflate"] = "deflate"
    gzip_engine: Literal["isal", "zlib"] = "isal"
    gzip_level: int | None = None
    retry_max_s: float = Field(default=60.0, gt=0)
    spool_dir: Path | None = None

    @field_validator("streams")
    @classmethod
    def _known_streams(cls, value: str) -> str:
        _parse(value, ("warc", "avro"), "DUALPLANE_SINK_STREAMS", allow_empty=False)
        return value

    @field_validator("partition_by")
    @classmethod
    def _known_fields(cls, value: str) -> str:
        _parse(value, ("date", "job"), "DUALPLANE_SINK_PARTITION_BY", allow_empty=True)
        return value

    @model_validator(mode="after")
    def _known_level(self) -> SinkSettings:
        low, high = GZIP_LEVELS[self.gzip_engine]
        if self.gzip_level is not None and not low <= self.gzip_level <= high:
            raise ValueError(
                f"DUALPLANE_SINK_GZIP_LEVEL={self.gzip_level}: {self.gzip_engine} takes levels {low}-{high}"
            )
        return self

    @property
    def effective_gzip_level(self) -> int:
        """``gzip_level``, or the engine's default."""
        return self.gzip_level if self.gzip_level is not None else GZIP_DEFAULT_LEVELS[self.gzip_engine]

    @property
    def stream_names(self) -> tuple[SinkStream, ...]:
        return tuple(_parse(self.streams, ("warc", "avro"), "", allow_empty=False))  # type: ignore[arg-type]

    @property
    def partition_fields(self) -> tuple[PartitionField, ...]:
        return tuple(_parse(self.partition_by, ("date", "job"), "", allow_empty=True))  # type: ignore[arg-type]


class SeedSettings(Section):
    """Seed lists (``connectors.seeds``, ``crawl --seeds-file``): local or ``s3://bucket/key``, gzip or not.

    - ``max_line_bytes`` (``DUALPLANE_SEEDS_MAX_LINE_BYTES``): a longer line is counted as bad and skipped
      without being held in memory.
    - ``max_url_chars`` (``DUALPLANE_SEEDS_MAX_URL_CHARS``): longer URLs are bad lines.
    - ``max_scope_domains`` (``DUALPLANE_SEEDS_MAX_SCOPE_DOMAINS``): without ``--allow-domain`` or
      ``--any-domain`` a job is scoped to its seeds' domains, which a first pass over the list collects;
      past this many it stops and asks for one of those options instead.
    """

    model_config = section("SEEDS_")

    max_line_bytes: int = Field(default=64 * 1024, ge=256)
    max_url_chars: int = Field(default=2048, ge=16)
    max_scope_domains: int = Field(default=10_000, ge=1)


def _parse(value: str, known: tuple[str, ...], name: str, *, allow_empty: bool) -> list[str]:
    items = [item.strip().lower() for item in value.split(",") if item.strip()]
    unknown = [item for item in items if item not in known]
    if unknown or (not items and not allow_empty) or len(set(items)) != len(items):
        raise ValueError(f"{name}={value!r}: give a comma-separated subset of {', '.join(known)}")
    return items
