"""JSON from outside, parsed only when its nesting is bounded.

Python's ``json`` recurses once per nested array or object and raises ``RecursionError`` (not a
``ValueError``) past about a thousand levels, which a consumer takes for a crash of its own and
retries for ever. A control message nests three levels at most, so anything deeper than
:data:`MAX_JSON_DEPTH` is refused before parsing, with a reason. The scan costs two
``bytes.count`` calls for ordinary messages: only a body with more brackets than the bound is
walked byte by byte.
"""

from __future__ import annotations

import json
from typing import Any

MAX_JSON_DEPTH = 32
_OPEN, _CLOSE, _QUOTE, _ESCAPE = frozenset(b"[{"), frozenset(b"]}"), ord('"'), ord("\\")


class JsonTooDeep(ValueError):
    """The document nests deeper than allowed; raised before it is parsed."""


def nesting_depth(data: bytes) -> int:
    """How deeply arrays and objects nest in ``data`` (brackets inside strings do not count)."""
    depth = deepest = 0
    in_string = escaped = False
    for byte in data:
        if in_string:
            in_string, escaped = (escaped or byte != _QUOTE), (not escaped and byte == _ESCAPE)
        elif byte == _QUOTE:
            in_string = True
        elif byte in _OPEN:
            depth += 1
            deepest = max(deepest, depth)
        elif byte in _CLOSE:
            depth -= 1
    return deepest


def loads_bounded(data: bytes, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads(data)``, or :class:`JsonTooDeep` if it nests deeper than ``max_depth``.

    Raises what ``json.loads`` raises for malformed input (``ValueError``, ``UnicodeDecodeError``).
    """
    if data.count(b"[") + data.count(b"{") > max_depth and (depth := nesting_depth(data)) > max_depth:
        raise JsonTooDeep(f"JSON nested {depth} levels deep (at most {max_depth} are accepted)")
    return json.loads(data)
