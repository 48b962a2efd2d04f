"""Ground truth: what an extractor should find on every product and article page of a site, and on a
site that changes (``SiteSpec.changes``), which pages changed between two time steps."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

from dualplane.sample_site.changes import CatalogAt, offer
from dualplane.sample_site.content import Catalog
from dualplane.sample_site.exceptions import SampleSiteError
from dualplane.sample_site.reachability import explore
from dualplane.sample_site.routes import SiteModel
from dualplane.sample_site.spec import Changes, SiteSpec

T = TypeVar("T")


@dataclass(frozen=True)
class ProductTruth:
    """One product. ``price`` is a decimal string (``"1299.00"``), ``availability`` a schema.org URL."""

    url: str
    name: str
    sku: str
    price: str
    currency: str
    availability: str
    markup: str


@dataclass(frozen=True)
class ArticleTruth:
    """One article. ``published_at`` is ISO 8601 with offset; ``body`` joins paragraphs with a blank line."""

    url: str
    headline: str
    authors: tuple[str, ...]
    published_at: str
    body: str
    markup: str


@dataclass(frozen=True)
class Truth:
    products: tuple[ProductTruth, ...]
    articles: tuple[ArticleTruth, ...]

    def by_url(self) -> dict[str, ProductTruth | ArticleTruth]:
        items: list[ProductTruth | ArticleTruth] = [*self.products, *self.articles]
        return {item.url: item for item in items}

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form, as ``GET /_truth`` serves it."""
        return {
            "products": [dataclasses.asdict(item) for item in self.products],
            "articles": [
                {**dataclasses.asdict(item), "authors": list(item.authors)} for item in self.articles
            ],
        }


def iter_products(spec: SiteSpec) -> Iterator[ProductTruth]:
    for origin, product in _each(spec, Catalog.product_count, Catalog.product):
        yield ProductTruth(
            url=origin + product.path,
            name=product.name,
            sku=product.sku,
            price=f"{product.price:.2f}",
            currency=product.currency,
            availability=product.availability_url,
            markup=product.markup,
        )


def iter_articles(spec: SiteSpec) -> Iterator[ArticleTruth]:
    for origin, article in _each(spec, Catalog.article_count, Catalog.article):
        yield ArticleTruth(
            url=origin + article.path,
            headline=article.headline,
            authors=article.authors,
            published_at=article.published_at.isoformat(),
            body=article.body,
            markup=article.markup,
        )


def _each(
    spec: SiteSpec, count: Callable[[Catalog, int], int], item: Callable[[Catalog, int, int], T]
) -> Iterator[tuple[str, T]]:
    """Every host's items of one kind, in order, each with its host's origin."""
    catalog = Catalog(spec)
    for host in range(spec.hosts):
        origin = spec.origin(host)
        for index in range(count(catalog, host)):
            yield origin, item(catalog, host, index)


def ground_truth(spec: SiteSpec) -> Truth:
    """Every product and article of the site described by ``spec`` (its ``base_port`` must be known)."""
    return Truth(tuple(iter_products(spec)), tuple(iter_articles(spec)))


def changed_products(spec: SiteSpec, since_step: int, until_step: int) -> set[str]:
    """URLs of the products whose price, availability or stock differ between the two steps."""
    changes = _changes_of(spec)
    before, after = CatalogAt(spec, changes, since_step), CatalogAt(spec, changes, until_step)
    changed = set()
    for host in range(spec.hosts):
        for index in range(before.product_count(host)):
            product = after.product(host, index)
            if offer(before.product(host, index)) != offer(product):
                changed.add(spec.origin(host) + product.path)
    return changed


def changed_pages(spec: SiteSpec, since_step: int, until_step: int) -> set[str]:
    """URLs of the reachable pages whose body differs between the two steps: the changed products,
    and every listing, home or product page that shows one of them (a 304 is right for the rest)."""
    _changes_of(spec)
    model, hosts = SiteModel(spec), {urlsplit(origin).netloc: i for i, origin in enumerate(spec.origins())}
    changed = set()
    for url in explore(spec).pages:
        parts = urlsplit(url)
        bodies = {
            model.resolve(hosts[parts.netloc], parts.path, parts.query, step).body
            for step in (since_step, until_step)
        }
        if len(bodies) > 1:
            changed.add(url)
    return changed


def _changes_of(spec: SiteSpec) -> Changes:
    if spec.changes is None:
        raise SampleSiteError("this site does not change: give its SiteSpec changes=Changes(...)")
    return spec.changes
