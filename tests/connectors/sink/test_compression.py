"""The ISA-L engine's members and blocks: the bytes of ``isal_zlib.compress``, through the GIL-free call."""

from __future__ import annotations

import gzip
import zlib

import pytest
from isal import isal_zlib

from dualplane.connectors.sink.compression import deflate_block, gzip_member
from dualplane.core.settings import SinkSettings

DATA = [b"", b"x", b"<html><p>" + b"words and more words " * 3000 + b"</p></html>", bytes(range(256)) * 700]


@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_isal_members_and_blocks_are_the_bytes_isal_zlib_writes(level: int) -> None:
    sink = SinkSettings(gzip_engine="isal", gzip_level=level)
    member, block = gzip_member(sink), deflate_block(sink)
    assert block is not None

    for data in DATA:
        assert member(data) == isal_zlib.compress(data, level=level, wbits=zlib.MAX_WBITS | 16)
        assert block(data) == isal_zlib.compress(data, level=level, wbits=-zlib.MAX_WBITS)
        assert gzip.decompress(member(data)) == data
        assert zlib.decompress(block(data), -zlib.MAX_WBITS) == data
