"""Raw pages decoded for the WARC sink: by cavro with the writer schema when it can, else by the codec.

fastavro's decode through the codec (which resolves each page to the newest reader schema) cost ~0.4 ms
of CPU per MB of real pages, cavro's of the writer schema ~0.2 (``benchmarks/sink_throughput.py``). The
WARC sink reads every field with ``.get`` and takes the fetch time as a datetime or as epoch
milliseconds, so it needs no resolution: a field an older writer lacks reads as missing, as its default
(``None``, ``False``, empty) would. Logical types stay their underlying types (``fetched_at`` in ms).
Confluent-framed pages, schemas this process does not know and Pythons without cavro take the codec.
"""

from __future__ import annotations

from typing import Any

from dualplane import schemas
from dualplane.schemas.wire import split

try:
    import cavro
except ImportError:  # no wheel for this Python (3.13 on): every page takes the codec
    cavro = None

RAW_PAGE = "raw_page"


class RawPageDecoder:
    """``value`` (a ``pages.raw`` message) to the page's fields; raises what either decoder raises."""

    def __init__(self, codec: schemas.Codec) -> None:
        self.codec = codec
        self._by_fingerprint: dict[int, Any] = {}  # fingerprint -> cavro schema, or None: the codec

    def __call__(self, value: bytes) -> dict[str, Any]:
        frame = split(value)
        schema = None if frame.fingerprint is None else self._schema(frame.fingerprint)
        if schema is None:
            record: dict[str, Any] = self.codec.decode(value).record
            return record
        decoded: dict[str, Any] = schema.binary_decode(value[frame.body_offset :])
        return decoded

    def _schema(self, fingerprint: int) -> Any:
        if fingerprint not in self._by_fingerprint:
            known = schemas.default_registry().find(fingerprint)
            usable = cavro is not None and known is not None and known.name == RAW_PAGE
            self._by_fingerprint[fingerprint] = (
                cavro.Schema(known.definition, record_decodes_to_dict=True, logical_types=())
                if usable and known is not None
                else None
            )
        return self._by_fingerprint[fingerprint]
