"""How WARC records are gzipped and Avro blocks deflated: ISA-L (``isal``) by default, or zlib.

Both write standard deflate streams (gzip members for WARC, raw deflate for Avro's ``deflate`` codec) that
every reader inflates with zlib; ISA-L's are a little larger
and several times faster to make (real article pages of ~200 KiB on the development VM: zlib level 6
made ~25 MB/s at ratio 5.7, isal level 2 ~240 MB/s at ratio 5.0), and gzip was most of the sink's CPU.
``DUALPLANE_SINK_GZIP_ENGINE`` and ``DUALPLANE_SINK_GZIP_LEVEL`` choose; the same engine and level
always write the same bytes, so a re-run still writes byte-identical files.

ISA-L is called through ``igzip_lib.compress``, which writes the same bytes as ``isal_zlib.compress`` (a
test compares them) but releases the GIL while it compresses, as zlib does: the WARC sink builds records
on several threads (:mod:`connectors.sink.prepare`), and with ``isal_zlib`` they took turns.
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import Callable

from isal import igzip_lib

from dualplane.core.settings import SinkSettings

GzipMember = Callable[[bytes], bytes]
"""Compresses one whole record into one gzip member."""

Deflate = Callable[[bytes], bytes]
"""Compresses one Avro block into raw deflate (RFC 1951), as the ``deflate`` codec stores it."""

GZIP_WBITS = zlib.MAX_WBITS | 16  # a gzip header and trailer around the deflate stream
RAW_WBITS = -zlib.MAX_WBITS  # no header, no trailer


def gzip_member(sink: SinkSettings) -> GzipMember:
    """The compressor ``DUALPLANE_SINK_GZIP_ENGINE`` / ``..._GZIP_LEVEL`` name."""
    if sink.gzip_engine == "isal":
        return functools.partial(
            igzip_lib.compress, level=sink.effective_gzip_level, flag=igzip_lib.COMP_GZIP
        )
    return functools.partial(zlib.compress, level=sink.effective_gzip_level, wbits=GZIP_WBITS)


def deflate_block(sink: SinkSettings) -> Deflate | None:
    """Avro's ``deflate`` codec by that engine and level, or None for ``DUALPLANE_SINK_AVRO_CODEC=null``."""
    if sink.avro_codec == "null":
        return None
    if sink.gzip_engine == "isal":
        return functools.partial(
            igzip_lib.compress, level=sink.effective_gzip_level, flag=igzip_lib.COMP_DEFLATE
        )
    return functools.partial(zlib.compress, level=sink.effective_gzip_level, wbits=RAW_WBITS)
