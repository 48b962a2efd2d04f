"""Shop hosts with crawler traps, as real shops have them (``SiteSpec.faceted_hosts``).

On such a host every product listing carries filter links (colour, size, sort, brand): each adds
or changes one query parameter, so a listing page has 144 spellings. Beside them, two endless
traps: an events calendar (``/events/2026-12`` links the next month, for ever) and a relative
link loop (``/browse/`` links ``all/``, so ``/browse/all/all/all/…``). Every trap page answers 200
with the host's layout: nothing tells a crawler it is in one but its profile's limits.

Trap pages are not part of the site's truth: :func:`is_trap` keeps the reachability walk (and so
"the whole site") to the real pages, which a budgeted crawl must still fetch in full.
"""

from __future__ import annotations

from html import escape
from urllib.parse import parse_qsl, urlencode

from dualplane.sample_site.layout import Head, Page, document

FACETS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("color", ("red", "blue", "green")),
    ("size", ("s", "m", "l")),
    ("sort", ("price", "name")),
    ("brand", ("acme", "globex")),
)
FACET_NAMES = frozenset(name for name, _ in FACETS)
EVENTS, BROWSE = "/events/", "/browse/"
FIRST_MONTH = "2026-12"


def is_faceted(page: Page) -> bool:
    return page.host in page.spec.faceted_hosts


def is_trap(path: str, query: str) -> bool:
    """Whether ``path?query`` on a faceted host is a trap page (not part of the site's truth)."""
    if path.startswith((EVENTS, BROWSE)):
        return True
    return path == "/products" and any(name in FACET_NAMES for name, _ in parse_qsl(query))


def chosen_facets(query: str) -> dict[str, str] | None:
    """The filters a listing's query sets, in ``FACETS`` order; None when one is not a known value."""
    given = dict(parse_qsl(query))
    chosen = {}
    for name, options in FACETS:
        if name in given:
            if given[name] not in options:
                return None
            chosen[name] = given[name]
    return chosen


def facet_nav(page: Page, number: int, chosen: dict[str, str]) -> str:
    """The filter links of listing page ``number`` (each changes one filter), and the two traps."""
    links = []
    for name, options in FACETS:
        for option in options:
            if chosen.get(name) != option:
                query = urlencode({"page": number, **_ordered({**chosen, name: option})})
                links.append(page.a(f"/products?{query}", f"{name}: {option}"))
    links.append(page.a(EVENTS + FIRST_MONTH, "Events"))
    links.append(page.a(BROWSE, "Browse everything"))
    return '<nav class="facets" aria-label="Filter">' + " ".join(links) + "</nav>"


def render_month(page: Page, month: str) -> str:
    """An events calendar month, linking the months before and after it: it never ends."""
    year, number = int(month[:4]), int(month[5:])
    after = f"{year + number // 12}-{number % 12 + 1:02d}"
    before = f"{year - (number == 1)}-{(number - 2) % 12 + 1:02d}"
    main = (
        f"<h1>Events in {escape(month)}</h1>\n<p>No events this month.</p>\n"
        f"<p>{page.a(EVENTS + before, 'Earlier')} · {page.a(EVENTS + after, 'Later')}</p>"
    )
    return document(page, Head(f"Events {month}", "What is on."), main)


def render_browse(page: Page) -> str:
    """A browse page whose relative link ``all/`` goes one level deeper, for ever."""
    main = f"<h1>Browse</h1>\n<p>{page.a('all/', 'See all')} · {page.a('/products?page=1', 'Products')}</p>"
    return document(page, Head("Browse", "Everything we sell."), main)


def month_of(path: str) -> str | None:
    """The month of an events path (``/events/2027-03``), None if it is no month."""
    month = path[len(EVENTS) :]
    ok = len(month) == 7 and month[4] == "-" and month[:4].isdigit() and month[5:].isdigit()
    return month if ok and 1 <= int(month[5:]) <= 12 else None


def _ordered(chosen: dict[str, str]) -> dict[str, str]:
    return {name: chosen[name] for name, _ in FACETS if name in chosen}
