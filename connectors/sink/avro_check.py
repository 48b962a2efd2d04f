"""The S3 sink's proof that one Avro datum is well-formed: decoded completely, and exactly its bytes long.

A container block is the records' datums one after the other, so one datum that is not exactly an
encoding of the writer schema makes the rest of its block unreadable, or worse, readable as something
else. Each datum is therefore decoded in full before it is copied into a file: every string is UTF-8,
every union branch and enum symbol exists, nothing is cut short, nothing is left over.

The decode is cavro's (an Avro implementation in Cython, independent of the fastavro that wrote the
records): on the extractor's records it costs about half of fastavro's (3.9 against 8.7 ms of CPU per MB
on the development VM, ``benchmarks/sink_throughput.py``), and it rejects what fastavro rejects (and a
negative union branch, which fastavro reads as the last one). cavro does not say how many bytes it read,
so the datum is decoded inside a wrapper record followed by a 16-byte ``fixed`` end marker drawn at
random per process: the marker reads back intact only when the datum took exactly its own bytes (a
datum that stops early would read its leftover bytes as the start of the marker, which no datum can know,
and the marker shifted, which differs from itself as its first byte occurs only once; one that runs on
reads into the marker and then finds fewer than 16 bytes left). Logical types are read as their
underlying types: a date beyond what Python's ``datetime`` holds is still valid Avro.
"""

from __future__ import annotations

import os
from typing import Any

try:
    import cavro
except ImportError:  # cavro 1.0 ships wheels up to CPython 3.12 only; the sink then checks with fastavro
    cavro = None

END_MARKER_BYTES = 16


class DatumCheck:
    """Decodes datums of one writer schema (``definition``, parsed JSON); raises when one is not valid."""

    def __init__(self, definition: Any) -> None:
        if cavro is None:
            raise ImportError("cavro is not installed (it has no wheel for this Python)")
        self.end = _end_marker()
        wrapper = {
            "type": "record",
            "name": "Checked",
            "namespace": "dualplane.sink.check",
            "fields": [
                {"name": "datum", "type": definition},
                {"name": "end", "type": {"type": "fixed", "name": "End", "size": END_MARKER_BYTES}},
            ],
        }
        self.schema = cavro.Schema(wrapper, record_decodes_to_dict=True, logical_types=())

    def __call__(self, body: bytes | memoryview) -> Any:
        """The decoded datum; ``ValueError``, ``EOFError``, ``UnicodeDecodeError``... if ``body`` is none."""
        decoded = self.schema.binary_decode(b"".join((body, self.end)))
        if decoded["end"] != self.end:
            raise ValueError("the datum ends before its last byte: trailing bytes")
        return decoded["datum"]


def _end_marker() -> bytes:
    """Random bytes whose first byte occurs only once, so no shift of the marker equals the marker."""
    while True:
        marker = os.urandom(END_MARKER_BYTES)
        if marker[0] not in marker[1:]:
            return marker
