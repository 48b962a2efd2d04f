"""Backward compatibility of two schemas: can a reader with the new schema read data written with the old?

The rules are the Avro specification's schema resolution: a reader field missing from the writer
needs a default; writer fields the reader dropped are skipped; types must match or be promotable
(int -> long, float, double; long -> float, double; float -> double; string <-> bytes); unions
must cover every branch the writer may have written; enums must know every writer symbol or have a
default; fixed sizes and decimal precision and scale must be equal.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from fastavro import parse_schema

PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
NAMED = frozenset({"record", "error", "enum", "fixed"})
PROMOTIONS = {
    "int": {"long", "float", "double"},
    "long": {"float", "double"},
    "float": {"double"},
    "string": {"bytes"},
    "bytes": {"string"},
}


def check_backward(old: Any, new: Any) -> list[str]:
    """Problems that stop ``new`` (reader) from reading data written with ``old`` (writer); empty if none.

    Both are schema JSON: a parsed ``.avsc`` object, its text, or a primitive type name.
    """
    try:
        writer, reader = _Side(old), _Side(new)
    except Exception as error:  # an unparseable schema is itself the problem to report
        return [f"schema is not valid Avro: {error}"]
    checker = _Checker(writer, reader)
    checker.check(writer.schema, reader.schema, _name(reader.schema, reader))
    return checker.problems


class _Side:
    """One schema, parsed by fastavro, with its named types looked up by full name."""

    def __init__(self, schema: Any) -> None:
        loaded = json.loads(schema) if isinstance(schema, str) and schema not in PRIMITIVES else schema
        self.schema = parse_schema(loaded)
        self.named: dict[str, Any] = {}
        for node in _walk(self.schema):
            if isinstance(node, dict) and node.get("type") in NAMED:
                self.named[node["name"]] = node

    def resolve(self, schema: Any) -> Any:
        """A named-type reference replaced by its definition; anything else unchanged."""
        if isinstance(schema, str) and schema in self.named:
            return self.named[schema]
        return schema


class _Checker:
    def __init__(self, writer: _Side, reader: _Side) -> None:
        self.writer, self.reader = writer, reader
        self.problems: list[str] = []
        self.seen: set[tuple[str, str]] = set()

    def check(self, old: Any, new: Any, path: str) -> None:
        old, new = self.writer.resolve(old), self.reader.resolve(new)
        if isinstance(new, list):
            self._into_union(old, new, path)
        elif isinstance(old, list):
            for branch in old:  # every branch the writer may have written must read as ``new``
                self.check(branch, new, path)
        elif not _matches(old, new):
            self.problems.append(f"{path}: {_describe(old)} data cannot be read as {_describe(new)}")
        else:
            self._same_kind(old, new, path)

    def _into_union(self, old: Any, new: list[Any], path: str) -> None:
        for written in old if isinstance(old, list) else [old]:
            branch = self.writer.resolve(written)
            target = next((b for b in new if _matches(branch, self.reader.resolve(b))), None)
            if target is None:
                choices = ", ".join(_describe(self.reader.resolve(b)) for b in new)
                self.problems.append(f"{path}: {_describe(branch)} data matches no branch of [{choices}]")
            else:
                self.check(branch, target, path)

    def _same_kind(self, old: Any, new: Any, path: str) -> None:
        kind = _type(new)
        if kind in ("record", "error"):
            self._record(old, new, path)
        elif kind == "array":
            self.check(old["items"], new["items"], f"{path}[]")
        elif kind == "map":
            self.check(old["values"], new["values"], f"{path}{{}}")
        elif kind == "enum":
            missing = [s for s in old["symbols"] if s not in new["symbols"]]
            if missing and "default" not in new:
                self.problems.append(
                    f"{path}: enum symbols {missing} were removed and the enum has no default"
                )
        elif kind == "fixed" and old["size"] != new["size"]:
            self.problems.append(f"{path}: fixed size changed from {old['size']} to {new['size']}")
        self._decimal(old, new, path)

    def _record(self, old: dict[str, Any], new: dict[str, Any], path: str) -> None:
        if (old["name"], new["name"]) in self.seen:
            return  # a recursive type already being compared
        self.seen.add((old["name"], new["name"]))
        written = {field["name"]: field for field in old["fields"]}
        for field in new["fields"]:
            names = [field["name"], *field.get("aliases", [])]
            source = next((written[name] for name in names if name in written), None)
            where = f"{path}.{field['name']}"
            if source is not None:
                self.check(source["type"], field["type"], where)
            elif "default" not in field:
                self.problems.append(f"{where}: new field without a default; old data has no value for it")

    def _decimal(self, old: Any, new: Any, path: str) -> None:
        if _logical(old) == "decimal" and _logical(new) == "decimal":
            before, after = (old.get("precision"), old.get("scale")), (new.get("precision"), new.get("scale"))
            if before != after:
                self.problems.append(f"{path}: decimal (precision, scale) changed from {before} to {after}")


def _matches(old: Any, new: Any) -> bool:
    """The spec's "schemas match" for two non-union schemas (named types already resolved)."""
    old_kind, new_kind = _type(old), _type(new)
    if old_kind in NAMED or new_kind in NAMED:
        return old_kind == new_kind and _named_match(old, new)
    return old_kind == new_kind or new_kind in PROMOTIONS.get(old_kind, set())


def _named_match(old: dict[str, Any], new: dict[str, Any]) -> bool:
    names = {new["name"], *new.get("aliases", [])}
    return old["name"] in names or _short(old["name"]) in {_short(name) for name in names}


def _type(schema: Any) -> str:
    if isinstance(schema, list):
        return "union"
    if isinstance(schema, dict):
        return _type(schema["type"]) if isinstance(schema["type"], dict | list) else str(schema["type"])
    return str(schema)


def _logical(schema: Any) -> str | None:
    return schema.get("logicalType") if isinstance(schema, dict) else None


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def _describe(schema: Any) -> str:
    kind = _type(schema)
    if kind in NAMED:
        return f"{kind} {schema['name']}"
    logical = _logical(schema)
    return f"{kind} ({logical})" if logical else kind


def _name(schema: Any, side: _Side) -> str:
    schema = side.resolve(schema)
    return _short(schema["name"]) if _type(schema) in NAMED else _type(schema)


def _walk(schema: Any) -> Iterator[Any]:
    """Every schema node, depth first, named types at their definition."""
    yield schema
    if isinstance(schema, list):
        for branch in schema:
            yield from _walk(branch)
    elif isinstance(schema, dict):
        for field in schema.get("fields", []):
            yield from _walk(field["type"])
        for key in ("items", "values"):
            if key in schema:
                yield from _walk(schema[key])
        if isinstance(schema.get("type"), dict | list):
            yield from _walk(schema["type"])
