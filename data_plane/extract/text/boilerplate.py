"""Boilerplate that survives main-text extraction, cut from the text by its wording.

trafilatura drops navigation and related-content boxes by their markup, but many sites put them in
the article's own container, so the main text ends with "You might also like", "Contenido
relacionado", "Das könnte Sie auch interessieren" and their links, or with a copyright line. These are
recognised by their wording, in the languages of the development set and their neighbours, never by
a site:

- a tail heading in the second half of the text cuts it there: a line that is only such a phrase, or
  a short title that opens like one ("More from Opinion", "Other Opinion Columns", "Mehr aus …");
- copyright lines at the very end are dropped;
- a teaser line, a short label and the headline of another page ("Lea también: <a>…</a>", "MIRA: …",
  "Lesen Sie hier: …"), is dropped wherever it stands: after the label the line is exactly the text of
  a link on the page, of at least ``MIN_TEASER_WORDS`` words. The wording of the label is not looked at,
  so this holds in any language; a label with a plain value ("Quelle: kathpress", "Lage: Google Maps")
  is too short to be a headline, and one with a sentence after it is no link's text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection

TAIL_START_SHARE = 0.5
"""A tail heading cuts the text only when at least this share of its characters comes before it: a
heading early on is more likely a section of the article than the start of its footer."""
MAX_COPYRIGHT_WORDS = 30
MAX_HEADING_CHARS = 60

_TAIL_PHRASES = (
    # English
    "you might also like|you may also like|you might be interested in|related|related articles|"
    "related stories|related posts|related content|related news|related coverage|read next|recommended|"
    "recommended for you|recommended stories|more stories|more from this author|more on this story|"
    "most popular|most read|trending now|share this|share this article|share this story|leave a comment|"
    "leave a reply|comments|tags|topics|about the author|sign up for our newsletter|"
    "subscribe to our newsletter",
    # German
    "weitere artikel|weitere beiträge|ähnliche artikel|ähnliche beiträge|verwandte artikel|verwandte themen|"
    "das könnte sie auch interessieren|das könnte dich auch interessieren|"
    "das thema könnte dich auch interessieren|das könnte ihnen auch gefallen|mehr zum thema|"
    "empfohlene beiträge|empfohlene artikel|zum weiterlesen|auch interessant|meistgelesen|"
    "meistgelesene artikel|keine kommentare|kommentare|beitrag teilen|artikel teilen|schlagworte|"
    "schlagwörter",
    # French
    "à lire aussi|sur le même sujet|articles similaires|articles liés|vous aimerez aussi|à voir aussi|"
    "les plus lus|commentaires|dans la même rubrique",
    # Spanish, Portuguese, Italian
    "contenido relacionado|notas relacionadas|noticias relacionadas|artículos relacionados|"
    "te puede interesar|también te puede interesar|te recomendamos|más noticias|lo más leído|etiquetas|temas",
    "leia também|veja também|notícias relacionadas|conteúdo relacionado|mais lidas|você também pode gostar",
    "leggi anche|articoli correlati|potrebbe interessarti anche|i più letti",
    # Dutch, Polish
    "lees ook|gerelateerde artikelen|meer nieuws",
    "czytaj także|czytaj też|zobacz także|powiązane artykuły|najczęściej czytane",
)
_TAIL_HEADINGS = frozenset(phrase for group in _TAIL_PHRASES for phrase in group.split("|"))
_HEADING_ENDS = " :>\u00bb\u203a"  # a colon or an arrow (guillemets) after it
_TAIL_PREFIX = re.compile(
    r"^(?:more (?:from|in|on|stories|news|articles)|other \w+ (?:columns|stories|articles|news)"
    r"|latest (?:news|stories|articles)|mehr (?:aus|zum|zu|von)|weitere (?:artikel|beiträge|nachrichten)"
    r"|plus d'articles|autres articles|más (?:de|noticias|artículos)|otras noticias|altre notizie"
    r"|outras notícias|więcej artykułów)\b",
    re.I,
)
MAX_PREFIX_WORDS = 6
_COPYRIGHT = re.compile(r"^(?:©|\(c\)|copyright\b)", re.I)
MAX_LABEL_WORDS = 3
MIN_TEASER_WORDS = 4
"""A teaser's link text has at least this many words: a headline, not a name or a value."""
_LABELLED = re.compile(r"^\W*([^:]{1,40}?)\s*:\s*(.+)$")


def trim_boilerplate(text: str, link_texts: Callable[[], Collection[str]] | None = None) -> str:
    """``text`` (lines of main text) without its related-content tail, closing copyright lines, and
    teaser lines that label the text of one of the page's links (``link_texts()``, spaces collapsed;
    called only when a line looks like a teaser)."""
    lines = _drop_link_teasers(text.splitlines(), link_texts)
    lines = _cut_tail(lines)
    while len(lines) > 1 and _is_copyright(lines[-1]):
        lines.pop()
    return "\n".join(lines)


def _cut_tail(lines: list[str]) -> list[str]:
    total = sum(len(line) + 1 for line in lines)
    before = 0
    for index, line in enumerate(lines):
        if index and before >= TAIL_START_SHARE * total and _is_tail_heading(line):
            return lines[:index]
        before += len(line) + 1
    return lines


def _is_tail_heading(line: str) -> bool:
    """The line is a tail phrase (any case and spacing, maybe with a trailing colon or arrow), or a short
    title that opens like one."""
    if len(line) > MAX_HEADING_CHARS:
        return False
    heading = " ".join(line.lower().split()).strip(_HEADING_ENDS)
    if heading in _TAIL_HEADINGS:
        return True
    # "More from Opinion", "Other Opinion Columns", "Mehr aus dem Ressort": a short title, no sentence
    return (
        len(heading.split()) <= MAX_PREFIX_WORDS
        and not heading.endswith(".")
        and bool(_TAIL_PREFIX.match(heading))
    )


def _is_copyright(line: str) -> bool:
    stripped = line.strip()
    return bool(_COPYRIGHT.match(stripped)) and len(stripped.split()) <= MAX_COPYRIGHT_WORDS


def _drop_link_teasers(lines: list[str], link_texts: Callable[[], Collection[str]] | None) -> list[str]:
    """``lines`` without those that are a short label, then exactly a link's text of headline length
    ("Lea también: Impiden ingreso a …"): such a paragraph points to another page (a one-line teaser
    inside the body), it is not part of this one."""
    linked = {index: teaser for index, line in enumerate(lines) if (teaser := _labelled_headline(line))}
    if not linked or link_texts is None:
        return lines
    texts = link_texts()
    return [line for index, line in enumerate(lines) if linked.get(index) not in texts]


def _labelled_headline(line: str) -> str | None:
    """What follows a short label ("MIRA: …") when it is long enough to be a headline."""
    if ":" not in line:  # most lines; the pattern backtracks through 40 lengths of label to find none
        return None
    labelled = _LABELLED.match(line)
    if labelled is None or len(labelled.group(1).split()) > MAX_LABEL_WORDS:
        return None
    headline = " ".join(labelled.group(2).split())
    return headline if len(headline.split()) >= MIN_TEASER_WORDS else None
