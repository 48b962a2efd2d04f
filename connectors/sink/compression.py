"""How WARC records are gzipped and Avro blocks deflated: ISA-L (``isal``) by default, or zlib.

Both write standard deflate streams (gzip members for WARC, raw deflate for Avro's ``deflate`` codec) that
every reader inflates with zlib; ISA-L's are a little larger
and several times faster to make (real article pages of ~200 KiB on the development VM: zlib level 6
made ~25 MB/s at ratio 5.7, isal level 2 ~240 MB/s at ratio 5.0), and gzip was most of the sink's CPU.
``DUALPLANE_SINK_GZIP_ENGINE`` and ``DUALPLANE_SINK_GZIP_LEVEL`` choose; the same engine and level
always write the same bytes, so a re-run still writes byte-identical files.
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import Callable

from isal import isal_zlib

from dualplane.core.settings import SinkSettings

GzipMember = Callable[[bytes], bytes]
"""Compresses one whole record into one gzip member."""

Deflate = Callable[[bytes], bytes]
"""Compresses one Avro block into raw deflate (RFC 1951), as the ``deflate`` codec stores it."""

GZIP_WBITS = zlib.MAX_WBITS | 16  # a gzip header and trailer around the deflate stream
RAW_WBITS = -zlib.MAX_WBITS  # no header, no trailer


def gzip_member(sink: SinkSettings) -> GzipMember:
    """The compressor ``DUALPLANE_SINK_GZIP_ENGINE`` / ``..._GZIP_LEVEL`` name."""
    module = isal_zlib if sink.gzip_engine == "isal" else zlib
    return functools.partial(module.compress, level=sink.effective_gzip_level, wbits=GZIP_WBITS)


def deflate_block(sink: SinkSettings) -> Deflate | None:
    """Avro's ``deflate`` codec by that engine and level, or None for ``DUALPLANE_SINK_AVRO_CODEC=null``."""
    if sink.avro_codec == "null":
        return None
    module = isal_zlib if sink.gzip_engine == "isal" else zlib
    return functools.partial(module.compress, level=sink.effective_gzip_level, wbits=RAW_WBITS)
