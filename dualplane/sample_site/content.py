"""Deterministic content: products and articles generated lazily from (seed, host, index).

Nothing is stored: any item is regenerated on demand from its key, so a site of tens of thousands
of pages costs no memory beyond a small cache. Draws use only ``random.Random(str).random()``,
whose output is fixed for a given string key, so the content does not drift between processes.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from functools import lru_cache
from typing import Literal, TypeVar

from dualplane.sample_site import words
from dualplane.sample_site.spec import SiteSpec

T = TypeVar("T")
Availability = Literal["InStock", "OutOfStock", "LimitedAvailability", "PreOrder"]
ProductMarkup = Literal["json-ld", "microdata", "plain"]
ArticleMarkup = Literal["json-ld", "markup"]

PRODUCT_MARKUPS: tuple[ProductMarkup, ...] = ("json-ld", "microdata", "plain")
ARTICLE_MARKUPS: tuple[ArticleMarkup, ...] = ("json-ld", "markup")
_EPOCH = datetime(2024, 1, 1, tzinfo=UTC)
_CACHE_SIZE = 4096


class Dice:
    """Reproducible draws from a string key."""

    def __init__(self, key: str) -> None:
        self._random = random.Random(key).random

    def below(self, n: int) -> int:
        return min(int(self._random() * n), n - 1)

    def between(self, low: int, high: int) -> int:
        """An integer in ``[low, high]``."""
        return low + self.below(high - low + 1)

    def pick(self, items: Sequence[T]) -> T:
        return items[self.below(len(items))]

    def chance(self, probability: float) -> bool:
        return self._random() < probability


def slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def slug_index(slug: str) -> int | None:
    """The index a slug ends with (``oak-desk-lamp-42`` -> 42), or None."""
    match = re.search(r"-(\d+)$", slug)
    return int(match.group(1)) if match else None


@dataclass(frozen=True)
class Product:
    host: int
    index: int
    slug: str
    name: str
    sku: str
    brand: str
    category: str
    description: str
    price: Decimal
    was_price: Decimal | None
    currency: str
    availability: Availability
    stock_left: int | None
    rating: Decimal
    review_count: int
    markup: ProductMarkup
    comma_decimals: bool  # plain markup writes 1.299,00 € instead of €1,299.00

    @property
    def path(self) -> str:
        return f"/product/{self.slug}"

    @property
    def image_path(self) -> str:
        return f"/images/{self.slug}.png"

    @property
    def availability_url(self) -> str:
        return f"https://schema.org/{self.availability}"


@dataclass(frozen=True)
class Article:
    host: int
    index: int
    slug: str
    headline: str
    authors: tuple[str, ...]
    published_at: datetime
    section: str
    standfirst: str
    markup: ArticleMarkup
    body_key: str  # the body is generated only when a page needs it

    @property
    def paragraphs(self) -> tuple[str, ...]:
        return make_paragraphs(self.body_key)

    @property
    def path(self) -> str:
        return f"/article/{self.slug}"

    @property
    def image_path(self) -> str:
        return f"/images/{self.slug}.png"

    @property
    def body(self) -> str:
        """The article text: paragraphs separated by a blank line."""
        return "\n\n".join(self.paragraphs)


@lru_cache(maxsize=_CACHE_SIZE)
def make_product(seed: int, host: int, index: int) -> Product:
    """Product ``index`` of host ``host``: the same arguments always give the same product."""
    dice = Dice(f"dualplane-sample:{seed}:{host}:product:{index}")
    name = f"{dice.pick(words.ADJECTIVES)} {dice.pick(words.MATERIALS)} {dice.pick(words.PRODUCT_NOUNS)}"
    brand = dice.pick(words.BRANDS)
    cents = _price_cents(dice)
    availability: Availability = dice.pick(
        ("InStock",) * 13 + ("OutOfStock",) * 3 + ("LimitedAvailability",) * 3 + ("PreOrder",)
    )
    return Product(
        host=host,
        index=index,
        slug=f"{slugify(name)}-{index}",
        name=name,
        sku=f"{slugify(brand)[:3].upper()}-{host + 1}{index:05d}",
        brand=brand,
        category=dice.pick(words.CATEGORIES),
        description=sentences(dice, 2),
        price=Decimal(cents).scaleb(-2),
        was_price=Decimal(cents * dice.between(110, 150) // 100).scaleb(-2) if dice.chance(0.25) else None,
        currency=dice.pick(("EUR",) * 6 + ("USD",) * 3 + ("GBP",)),
        availability=availability,
        stock_left=dice.between(1, 5) if availability == "LimitedAvailability" else None,
        rating=Decimal(dice.between(30, 50)).scaleb(-1),
        review_count=dice.between(0, 480),
        markup=PRODUCT_MARKUPS[(index + host) % len(PRODUCT_MARKUPS)],
        comma_decimals=dice.chance(0.3),
    )


@lru_cache(maxsize=_CACHE_SIZE)
def make_article(seed: int, host: int, index: int) -> Article:
    """Article ``index`` of host ``host``: the same arguments always give the same article."""
    key = f"dualplane-sample:{seed}:{host}:article:{index}"
    dice = Dice(key)
    headline = (
        f"{dice.pick(words.HEADLINE_SUBJECTS)} {dice.pick(words.HEADLINE_VERBS)} "
        f"{dice.pick(words.HEADLINE_OBJECTS)}"
    )
    author_count = dice.pick((1, 1, 1, 1, 1, 1, 1, 2, 2, 3))
    authors: list[str] = []
    while len(authors) < author_count:
        author = f"{dice.pick(words.FIRST_NAMES)} {dice.pick(words.LAST_NAMES)}"
        if author not in authors:
            authors.append(author)
    return Article(
        host=host,
        index=index,
        slug=f"{slugify(headline)}-{index}",
        headline=headline,
        authors=tuple(authors),
        published_at=_EPOCH + timedelta(minutes=5 * dice.below(366 * 24 * 12)),
        section=dice.pick(words.SECTIONS),
        standfirst=sentences(dice, 1),
        markup=ARTICLE_MARKUPS[(index + host) % len(ARTICLE_MARKUPS)],
        body_key=f"{key}:body",
    )


@lru_cache(maxsize=_CACHE_SIZE // 16)
def make_paragraphs(key: str) -> tuple[str, ...]:
    """Three to seven paragraphs of prose for the article whose body key is ``key``."""
    dice = Dice(key)
    return tuple(sentences(dice, dice.between(2, 5)) for _ in range(dice.between(3, 7)))


def _price_cents(dice: Dice) -> int:
    # Log-uniform from 3 to 2,500 so that thousands separators show up now and then.
    euros = int(10 ** (0.5 + 2.9 * dice.below(10_000) / 10_000))
    return euros * 100 + dice.pick((99, 99, 95, 0, 50))


def sentences(dice: Dice, count: int) -> str:
    """``count`` sentences of prose drawn from the word list."""
    written = []
    for _ in range(count):
        text = " ".join(dice.pick(words.WORDS) for _ in range(dice.between(8, 18)))
        written.append(text[0].upper() + text[1:] + ".")
    return " ".join(written)


class Catalog:
    """The items of every host of a site: counts, lookups by index or slug, cross-host partners.

    A shop host has only products, a news host only articles, a mixed host half of each.
    """

    def __init__(self, spec: SiteSpec) -> None:
        self.spec = spec

    def product_count(self, host: int) -> int:
        kind, pages = self.spec.kind(host), self.spec.pages_per_host
        return {"shop": pages, "news": 0, "mixed": (pages + 1) // 2}[kind]

    def article_count(self, host: int) -> int:
        kind, pages = self.spec.kind(host), self.spec.pages_per_host
        return {"shop": 0, "news": pages, "mixed": pages // 2}[kind]

    def product(self, host: int, index: int) -> Product:
        return make_product(self.spec.seed, host, index)

    def teaser(self, host: int, index: int) -> Product:
        """The product as a "you may also like" widget shows it: as generated, never as changed since
        (such widgets are rendered from a cache), so a change shows on the pages that list the product
        with its stock (its own, listings, the home page) and not on every page that mentions it."""
        return make_product(self.spec.seed, host, index)

    def article(self, host: int, index: int) -> Article:
        return make_article(self.spec.seed, host, index)

    def product_by_slug(self, host: int, slug: str) -> Product | None:
        index = slug_index(slug)
        if index is None or index >= self.product_count(host):
            return None
        product = self.product(host, index)
        return product if product.slug == slug else None

    def article_by_slug(self, host: int, slug: str) -> Article | None:
        index = slug_index(slug)
        if index is None or index >= self.article_count(host):
            return None
        article = self.article(host, index)
        return article if article.slug == slug else None

    def partner_article(self, host: int, index: int) -> Article | None:
        """An article on another host that product ``index`` of ``host`` links to, if any."""
        hosts = [other for other in range(self.spec.hosts) if other != host and self.article_count(other)]
        if not hosts:
            return None
        other = hosts[index % len(hosts)]
        return self.article(other, (index * 7) % self.article_count(other))

    def partner_product(self, host: int, index: int) -> Product | None:
        """A product on another host that article ``index`` of ``host`` links to, if any."""
        hosts = [other for other in range(self.spec.hosts) if other != host and self.product_count(other)]
        if not hosts:
            return None
        other = hosts[index % len(hosts)]
        return self.product(other, (index * 5) % self.product_count(other))
