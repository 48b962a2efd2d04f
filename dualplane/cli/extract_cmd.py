"""``dualplane extract FILE… [--url URL | --url-map MAP.json]``: offline extraction of saved pages.

Runs :func:`data_plane.extract.record.extract_record`, the extractor service's code path, on HTML
files (plain or gzipped), without brokers. Records go to stdout, one JSON object per line (with
``--json``: one JSON array); a short summary of each page goes to stderr. Decimals print as strings,
datetimes as ISO 8601. A file that fails is reported on stderr and makes the exit code 1; the other
files are still extracted and printed.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from dualplane import schemas
from dualplane.cli.output import JsonOption, stderr
from dualplane.core.exceptions import DualplaneError
from dualplane.data_plane.extract import (
    SCHEMA_VERSIONS,
    ExtractError,
    Extractor,
    SiteTrust,
    extract_record,
    load_extractor,
    saved_page,
)

FilesArgument = Annotated[
    list[Path], typer.Argument(help="Saved pages: HTML, plain or gzipped.", show_default=False)
]
UrlOption = Annotated[
    str | None, typer.Option("--url", help="Original URL of the page (one FILE only).", show_default=False)
]
UrlMapOption = Annotated[
    Path | None,
    typer.Option(
        "--url-map", metavar="MAP.json", help="JSON object: file name -> original URL.", show_default=False
    ),
]
SchemaVersionOption = Annotated[
    int | None,
    typer.Option(
        "--schema-version",
        help="page_record version to write (default: the latest, as the extractor service writes).",
        show_default=False,
    ),
]
ExtractorOption = Annotated[
    str | None,
    typer.Option(
        "--extractor", help="Extractor plugin to run too (its output goes into data, v3).", show_default=False
    ),
]


def extract(
    files: FilesArgument,
    url: UrlOption = None,
    url_map: UrlMapOption = None,
    schema_version: SchemaVersionOption = None,
    extractor: ExtractorOption = None,
    as_json: JsonOption = False,
) -> None:
    """Extract page records from saved HTML files, exactly as the extractor service would."""
    if schema_version is None:
        schema_version = schemas.latest_version("page_record")
    urls = _urls(files, url, url_map, schema_version)
    plugin = _plugin(extractor)
    sites = SiteTrust()  # many pages of one site: its later pages read as the extractor service reads them
    records: list[dict[str, Any]] = []
    failed = 0
    for path in files:
        try:
            record = _extract(path, urls.get(str(path)) or urls.get(path.name), schema_version, plugin, sites)
        except DualplaneError as error:  # the page could not be extracted, or its record would not encode
            stderr.print(
                f"[red]error:[/red] {escape(str(path))}: {escape(str(error))}",
                highlight=False,
                soft_wrap=True,
            )
            failed += 1
            continue
        records.append(record)
        if not as_json:
            sys.stdout.write(to_json(record) + "\n")
            sys.stdout.flush()
            _summary(path, record)
    if as_json:
        sys.stdout.write(to_json(records, indent=2) + "\n")
    if failed:
        stderr.print(f"{failed} of {len(files)} file(s) failed")
        raise typer.Exit(1)


def to_json(data: Any, indent: int | None = None) -> str:
    """``data`` as JSON: decimals as strings (exact), datetimes in ISO 8601; bytes are refused."""
    return json.dumps(data, default=_plain, ensure_ascii=False, indent=indent)


def _plugin(name: str | None) -> Extractor | None:
    try:
        return load_extractor(name) if name else None
    except ExtractError as error:
        raise typer.BadParameter(str(error), param_hint="--extractor") from error


def _extract(
    path: Path, url: str | None, schema_version: int, plugin: Extractor | None, sites: SiteTrust
) -> dict[str, Any]:
    record = extract_record(
        saved_page(path, url), schema_version=schema_version, extractor=plugin, sites=sites
    )
    schemas.encode("page_record", record, schema_version)  # what the service would publish must encode
    return record


def _urls(files: list[Path], url: str | None, url_map: Path | None, schema_version: int) -> dict[str, str]:
    if schema_version not in SCHEMA_VERSIONS:
        raise typer.BadParameter(f"must be one of {SCHEMA_VERSIONS}", param_hint="--schema-version")
    if url is not None and url_map is not None:
        raise typer.BadParameter("give either --url or --url-map, not both", param_hint="--url")
    if url is not None:
        if len(files) != 1:
            raise typer.BadParameter(f"names one page's URL but {len(files)} files were given; use --url-map")
        return {str(files[0]): url}
    return _read_map(url_map) if url_map is not None else {}


def _read_map(path: Path) -> dict[str, str]:
    try:
        mapping = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise typer.BadParameter(f"cannot read {path}: {error}", param_hint="--url-map") from error
    if not isinstance(mapping, dict) or not all(isinstance(v, str) for v in mapping.values()):
        raise typer.BadParameter(
            f"{path} must hold one JSON object mapping file names to URLs", param_hint="--url-map"
        )
    return {str(name): value for name, value in mapping.items()}


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not printable as JSON")


def _summary(path: Path, record: dict[str, Any]) -> None:
    product, article = record.get("product"), record.get("article")
    kind = "product" if product else "article" if article else "page"
    detail = ""
    if product:
        price = (
            f"{product['price']} {product['currency'] or ''}".strip()
            if product["price"] is not None
            else "no price"
        )
        detail = f" · {price} · {product['availability'] or 'availability unknown'}"
    elif article:
        authors = ", ".join(article["authors"]) or "no author"
        detail = f" · {article['headline'] or 'no headline'} · {authors}"
    words, links = len((record.get("text") or "").split()), len(record["links"])
    stderr.print(
        f"[green]{escape(str(path))}[/green] [dim]{escape(record['final_url'])}[/dim]\n"
        f"  {escape(record.get('title') or '(no title)')}\n"
        f"  {kind}{escape(detail)} · {words} words of text · {links} link{'' if links == 1 else 's'}",
        highlight=False,
        soft_wrap=True,
    )
