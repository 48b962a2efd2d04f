"""A seed list read line by line: decompressed when gzip, validated, bad lines counted, never held whole.

Memory stays flat whatever the list's size: the stream is read in buffered chunks, a line longer than
``DUALPLANE_SEEDS_MAX_LINE_BYTES`` is skipped in pieces rather than assembled, and nothing is kept per
line except the first few bad ones (as examples for the report). Blank lines and ``#`` comments are
skipped and not counted as bad; a line is bad when it is not UTF-8, holds whitespace inside, is longer
than ``DUALPLANE_SEEDS_MAX_URL_CHARS`` or is not an http(s) URL with a host.
"""

from __future__ import annotations

import gzip
import io
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, BinaryIO, cast

from dualplane.connectors.seeds.base import SeedSource
from dualplane.connectors.seeds.exceptions import SeedListError
from dualplane.core.settings import SeedSettings
from dualplane.core.web.exceptions import InvalidUrl
from dualplane.core.web.urls import domain_of

GZIP_MAGIC = b"\x1f\x8b"
EXAMPLES_KEPT = 5
READ_CHUNK_BYTES = 1024 * 1024
PROGRESS_EVERY = (
    1000  # seeds between progress callbacks: a bar updated per line would cost more than the line
)


@dataclass(frozen=True)
class BadLine:
    """A line that is not a seed: its 1-based number, why, and its first characters."""

    number: int
    reason: str
    text: str


@dataclass
class SeedList:
    """The valid URLs of one seed list, in order; the counters grow as it is iterated.

    ``bytes_read`` counts bytes of the stored (possibly compressed) list, ``total_bytes`` is its size when
    the source knows it, so the two make a progress bar. Iterating again reads the list again.
    """

    source: SeedSource
    settings: SeedSettings = field(default_factory=SeedSettings)
    lines: int = 0
    seeds: int = 0
    bad: int = 0
    bad_examples: list[BadLine] = field(default_factory=list)
    bytes_read: int = 0
    total_bytes: int | None = None

    @property
    def location(self) -> str:
        return self.source.location

    def __iter__(self) -> Iterator[str]:
        self.lines = self.seeds = self.bad = self.bytes_read = 0
        self.bad_examples = []
        raw, self.total_bytes = self.source.open()
        try:
            yield from self._urls(self._text_stream(raw))
        except (OSError, EOFError, zlib.error) as error:  # a cut or corrupt gzip stream, a dropped connection
            raise SeedListError(
                f"seed list {self.location} could not be read past line {self.lines}: {error}"
            ) from error
        finally:
            raw.close()

    def _text_stream(self, raw: BinaryIO) -> IO[bytes]:
        counted = io.BufferedReader(_Counting(raw, self), READ_CHUNK_BYTES)
        if counted.peek(2)[:2] == GZIP_MAGIC:
            unzipped = gzip.GzipFile(fileobj=counted, mode="rb")
            return cast(IO[bytes], io.BufferedReader(unzipped, READ_CHUNK_BYTES))
        return cast(IO[bytes], counted)

    def _urls(self, stream: IO[bytes]) -> Iterator[str]:
        limit = self.settings.max_line_bytes
        while True:
            line = stream.readline(limit + 1)
            if not line:
                return
            self.lines += 1
            if len(line) > limit and not line.endswith(b"\n"):
                _skip_rest_of_line(stream, limit)
                self._bad(f"longer than {limit} bytes", line)
                continue
            url = self._check(line)
            if url is not None:
                self.seeds += 1
                yield url

    def _check(self, line: bytes) -> str | None:
        try:
            text = line.decode("utf-8").strip()
        except UnicodeDecodeError:
            self._bad("not UTF-8", line)
            return None
        if not text or text.startswith("#"):
            return None
        reason = self._problem(text)
        if reason is not None:
            self._bad(reason, line)
            return None
        return text

    def _problem(self, text: str) -> str | None:
        if any(character.isspace() for character in text):
            return "whitespace inside the URL"
        if len(text) > self.settings.max_url_chars:
            return f"URL longer than {self.settings.max_url_chars} characters"
        try:
            domain_of(text)
        except InvalidUrl as error:
            return str(error)
        return None

    def _bad(self, reason: str, line: bytes) -> None:
        self.bad += 1
        if len(self.bad_examples) < EXAMPLES_KEPT:
            text = line[:80].decode("utf-8", "replace").rstrip("\r\n")
            self.bad_examples.append(BadLine(self.lines, reason, text))


def _skip_rest_of_line(stream: IO[bytes], chunk: int) -> None:
    while True:
        piece = stream.readline(chunk)
        if not piece or piece.endswith(b"\n"):
            return


class _Counting(io.RawIOBase):
    """A raw stream over the source's, adding every byte read to ``seeds.bytes_read``."""

    def __init__(self, inner: BinaryIO, seeds: SeedList) -> None:
        self.inner = inner
        self.seeds = seeds

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.inner.read(len(buffer))
        size = len(data)
        buffer[:size] = data
        self.seeds.bytes_read += size
        return size
