"""Per site, whether resiliparse's main content may stand in for trafilatura's: learned from the site's pages.

A page no rule knows as documentation (route ``element`` or ``page`` of
:mod:`~data_plane.extract.text.text_route`) is read by trafilatura, 3-14 ms of CPU on a documentation page
of a generator the rules have not met, where resiliparse's main content costs 0.2-2.6. No sign read on one
page tells both that it is documentation and that resiliparse reads it right (the eleventh CPU round of
``benchmarks/extraction-cpu.md``); a site's own pages can: they share one template. So a process that
extracts many pages of one host (the extractor service during a crawl, ``dualplane extract`` on many files)
reads a host's first page by trafilatura alone (most hosts of a broad crawl show one) and its next pages by
both engines, keeping trafilatura's text; once resiliparse's text agreed with it (token F1 of at least
``MIN_F1``) on ``AGREE_PAGES`` pages in a row, the host's later pages are read by
resiliparse alone, but every ``CHECK_EVERY``-th page is read by both again, and one disagreement sends the
host back to trafilatura. A host whose pages keep disagreeing (``GIVE_UP`` times since it was last trusted)
is checked only on every ``CHECK_EVERY``-th page, so a news site pays for the second engine on a few pages.

What is learned is keyed by the host and the page's layout (:func:`layout_of`: the tags and classes of the
body's top two levels), not the host alone: a host may serve several templates (a site's front page and its
docs, a platform's many blogs), and a layout it has not shown agreeing is not trusted.

The state is per process, bounded (the ``MAX_HOSTS`` hosts seen last), and owned by one :class:`SiteTrust`:
a page's record may depend on the pages of its host that the same process read before it. Replay and the
benchmarks that score pages one by one do not use it (their records depend on the page alone).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from selectolax.lexbor import LexborHTMLParser, LexborNode

Plan = Literal["full", "both", "fast"]

MIN_F1 = 0.9
"""Token F1 of resiliparse's main text against trafilatura's at which a page counts as agreeing. On the
documentation sites of ``benchmarks/doc_sites.py`` (``dev`` to ``test2``) where trafilatura reads a page,
the two texts reach 0.9-1.0 on sites whose template resiliparse reads (PCRE2's pages: 31 of 38) and stay at
0.2-0.7 on those it does not (rustdoc 2017's 41 pages: 0.57 each; TypeDoc's 40: 0.24-0.89; Maven's Doclava
pages: 0.5-0.6); at 0.95, a site of the first kind broke its streak on most pages (PCRE2: 21 of 38 agree)."""
AGREE_PAGES = 3
"""Pages in a row that must agree before a host is trusted."""
CHECK_EVERY = 32
"""A trusted host's every this-many-th page is read by both engines again (a template changed); a host that
gave up (``GIVE_UP``) is checked as often."""
GIVE_UP = 3
"""Disagreements since a host was last trusted after which it is checked only every ``CHECK_EVERY`` pages."""
MAX_HOSTS = 4096
"""Hosts (and layouts) remembered, the least recently read go first: some 200 bytes each."""
LAYOUT_DEPTH = 2
"""How many levels below ``<body>`` :func:`layout_of` reads. At 2, the 40 pages of each documentation site
of ``doc_sites.py``'s test3 and test4 splits show 1 to 3 layouts (the most common one on 25 to 40 of them);
the 56 pages of the dev set's ``fakehost`` (pages of many sites under one placeholder host) show 46."""
_DIGITS = re.compile(r"\d+")
_UNSEEN_TAGS = frozenset({"script", "style", "noscript", "template", "link", "meta"})


@dataclass(slots=True)
class _Host:
    seen: bool = False
    """Whether a page of the host (and layout) was read before: the first is read by trafilatura alone."""
    streak: int = 0
    """Pages in a row that agreed; the host is trusted at ``AGREE_PAGES``."""
    misses: int = 0
    """Disagreements since the host was last trusted."""
    since_check: int = 0
    """Pages read by one engine alone since the last page read by both."""


class SiteTrust:
    """Which engine reads the next page of a host, learned from its earlier pages (see the module)."""

    def __init__(
        self,
        *,
        min_f1: float = MIN_F1,
        agree_pages: int = AGREE_PAGES,
        check_every: int = CHECK_EVERY,
        give_up: int = GIVE_UP,
        max_hosts: int = MAX_HOSTS,
    ) -> None:
        self.min_f1, self.agree_pages, self.check_every = min_f1, agree_pages, check_every
        self.give_up, self.max_hosts = give_up, max_hosts
        self._hosts: OrderedDict[str, _Host] = OrderedDict()

    def plan(self, host: str) -> Plan:
        """``fast`` (resiliparse alone), ``full`` (trafilatura alone) or ``both`` (trafilatura's text, and
        resiliparse's compared with it: call :meth:`observe`) for the next page of ``host``."""
        state = self._state(host)
        if not state.seen:  # most hosts of a broad crawl show one page of a layout: nothing to learn there
            state.seen = True
            return "full"
        if state.streak >= self.agree_pages:
            return self._sparse(state, "fast")
        if state.streak > 0 or state.misses < self.give_up:
            return "both"
        return self._sparse(state, "full")

    def observe(self, host: str, full: str | None, fast: str | None) -> bool:
        """Record whether ``fast`` (resiliparse's text of a page of ``host``) agreed with ``full``
        (trafilatura's); return it."""
        state = self._state(host)
        agreed = fast is not None and full is not None and token_f1(fast, full) >= self.min_f1
        state.since_check = 0
        if agreed:
            state.streak += 1
            if state.streak >= self.agree_pages:
                state.misses = 0
        else:
            state.streak = 0
            state.misses += 1
        return agreed

    def text(self, host: str, full: Callable[[], str | None], fast: Callable[[], str | None]) -> str | None:
        """The page's main text by :meth:`plan`: ``fast()``'s where the host is trusted (``full()``'s where
        that finds nothing), else ``full()``'s, compared with ``fast()``'s when the plan says so."""
        plan = self.plan(host)
        if plan == "fast":
            text = fast()
            return text if text is not None else full()
        text = full()
        if plan == "both":
            self.observe(host, text, fast())
        return text

    def trusted(self, host: str) -> bool:
        """Whether ``host``'s next pages are read by resiliparse alone (not counting it as a read)."""
        state = self._hosts.get(host)
        return state is not None and state.streak >= self.agree_pages

    def __len__(self) -> int:
        """Hosts remembered."""
        return len(self._hosts)

    def _sparse(self, state: _Host, plan: Plan) -> Plan:
        state.since_check += 1
        return "both" if state.since_check >= self.check_every else plan

    def _state(self, host: str) -> _Host:
        state = self._hosts.get(host)
        if state is None:
            state = self._hosts[host] = _Host()
            if len(self._hosts) > self.max_hosts:
                self._hosts.popitem(last=False)
        else:
            self._hosts.move_to_end(host)
        return state


def layout_of(tree: LexborHTMLParser) -> str:
    """The layout of the page ``tree`` holds: the set of (level, tag, classes) of the elements in the top
    ``LAYOUT_DEPTH`` levels below ``<body>``, digits cut from the classes (``post-123``), as a short hash.
    Pages of one template share it whatever their text; a set, so how many sections a page has is no
    matter."""
    found: set[str] = set()
    if tree.body is not None:
        _walk(tree.body, 1, found)
    return hashlib.blake2b("\n".join(sorted(found)).encode(), digest_size=8).hexdigest()


def _walk(node: LexborNode, level: int, found: set[str]) -> None:
    for child in node.iter(include_text=False):
        tag = child.tag or ""
        if tag in _UNSEEN_TAGS or tag.startswith("-"):
            continue
        classes = sorted(_DIGITS.sub("", name) for name in (child.attributes.get("class") or "").split())
        found.add(f"{level} {tag} {' '.join(classes)}")
        if level < LAYOUT_DEPTH:
            _walk(child, level + 1, found)


def token_f1(text: str, other: str) -> float:
    """F1 of the words (split on white space, counted with repeats) of ``text`` against ``other``."""
    words, others = Counter(text.split()), Counter(other.split())
    common = sum((words & others).values())
    if not common:
        return 1.0 if not words and not others else 0.0
    precision, recall = common / sum(words.values()), common / sum(others.values())
    return 2 * precision * recall / (precision + recall)
