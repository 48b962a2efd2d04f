"""What a page says about itself in its head: title, description, canonical URL and language.

A ``rel=canonical`` link is trusted only on the page's own host (``www.`` aside): a canonical URL is
the record key, and a page must not be able to overwrite another site's records. Canonical URLs are
spelled the way the frontier spells URLs (:func:`core.web.urls.canonicalize`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import urljoin, urlsplit

from dualplane.core.web.exceptions import InvalidUrl
from dualplane.core.web.urls import canonicalize
from dualplane.data_plane.extract.markup import Markup, line

MAX_TITLE_CHARS = 1000
MAX_DESCRIPTION_CHARS = 5000
_LANGUAGE_TAG = re.compile(r"[a-z]{2,3}(?:-[a-z0-9]{2,8})*", re.I)


def title_of(page: Markup) -> str | None:
    node = page.tree.css_first("title")
    title = line(node) if node is not None else ""
    return (title or page.meta("og:title", "twitter:title") or "")[:MAX_TITLE_CHARS] or None


def description_of(page: Markup) -> str | None:
    found = page.meta("description", "og:description", "twitter:description") or ""
    return found[:MAX_DESCRIPTION_CHARS] or None


def canonical_url(page: Markup | None, final_url: str) -> str:
    """The trusted ``rel=canonical`` of ``page`` (resolved), else ``final_url``, in canonical form.

    URLs the frontier cannot canonicalize (``file://`` of offline extraction) are returned as they are.
    """
    declared = _declared_canonical(page, final_url) if page is not None else None
    for candidate in (declared, final_url):
        if candidate:
            try:
                return canonicalize(candidate)
            except InvalidUrl:
                continue
    return final_url


def language_of(page: Markup | None, headers: Mapping[str, str]) -> str | None:
    """BCP 47 tag from ``<html lang>``, a ``content-language`` meta or header; ``None`` if none is usable."""
    declared = [page.lang, page.meta("content-language")] if page is not None else []
    for value in [*declared, headers.get("content-language")]:
        tag = bcp47(value or "")
        if tag is not None:
            return tag
    return None


def bcp47(value: str) -> str | None:
    """``"en_us"`` -> ``"en-US"``, ``"zh-hant-tw"`` -> ``"zh-Hant-TW"``; a list's first tag; else ``None``."""
    first = value.split(",", maxsplit=1)[0].split(";", maxsplit=1)[0].strip().replace("_", "-")
    if not _LANGUAGE_TAG.fullmatch(first):
        return None
    language, *subtags = first.split("-")
    cased = [language.lower()]
    for subtag in subtags:
        if len(subtag) == 4 and subtag.isalpha():
            cased.append(subtag.title())
        elif len(subtag) == 2 and subtag.isalpha():
            cased.append(subtag.upper())
        else:
            cased.append(subtag.lower())
    return "-".join(cased)


def _declared_canonical(page: Markup, final_url: str) -> str | None:
    for link in page.tree.css("link[rel][href]"):
        if "canonical" in (link.attributes.get("rel") or "").lower().split():
            href = (link.attributes.get("href") or "").strip()
            try:
                resolved = urljoin(final_url, href) if href else None
            except ValueError:
                return None
            return resolved if resolved and _same_site(resolved, final_url) else None
    return None


def _same_site(url: str, other: str) -> bool:
    try:
        first, second = urlsplit(url), urlsplit(other)
    except ValueError:
        return False
    if first.scheme not in ("http", "https"):
        return False
    return _host(first.hostname) == _host(second.hostname)


def _host(hostname: str | None) -> str:
    host = (hostname or "").lower()
    return host.removeprefix("www.")
