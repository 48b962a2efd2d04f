"""Language of a page's text by statistical detection (py3langid), for pages that declare none.

The model loads on first use (about half a second, once per process). Short texts are not guessed:
below ``MIN_WORDS`` words a guess is wrong too often to be worth a field downstream may trust.
"""

from __future__ import annotations

MIN_WORDS = 20
SAMPLE_CHARS = 2000
"""The model reads this much of the text: its cost grows with it (1.9 ms for 5,000 characters, 1.1 for
2,000: a fifth of a short documentation page's extraction), its answer seldom does (the same on 1,706 of
1,707 texts of the dev, test, large and documentation pages; the other is Rust source code, "en" or "zxx")."""


def detect_language(text: str | None) -> str | None:
    """ISO 639-1 code of ``text``'s language (``"en"``), or ``None`` for short or missing text."""
    if not text or len(text.split()) < MIN_WORDS:
        return None
    import py3langid  # noqa: PLC0415  (pulls in numpy and a model: load when needed)

    language, _score = py3langid.classify(text[:SAMPLE_CHARS])
    return str(language) or None
