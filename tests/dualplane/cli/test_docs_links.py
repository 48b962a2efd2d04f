"""Every relative link in the README and ``docs/`` leads somewhere: the file exists and, when the link
names a heading (``page.md#anchor``), the page has that heading. Moving a section between pages
breaks this test instead of a reader's click."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} (.+)$")


def anchors(page: Path) -> set[str]:
    """GitHub's anchors for the page's headings (outside code blocks)."""
    found: set[str] = set()
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        heading = None if fenced else HEADING.match(line)
        if heading:
            text = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower())
            found.add(text.replace(" ", "-"))
    return found


def links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return [link for link in LINK.findall(text) if not re.match(r"^[a-z]+:", link)]


CASES = [(page, link) for page in PAGES for link in links(page)]


def test_the_docs_link_to_each_other() -> None:
    assert sum(1 for page, _ in CASES if page.name == "README.md") >= 10


@pytest.mark.parametrize(("page", "link"), CASES, ids=[f"{page.name}->{link}" for page, link in CASES])
def test_a_relative_link_leads_somewhere(page: Path, link: str) -> None:
    path, _, anchor = link.partition("#")
    target = (page.parent / path).resolve() if path else page
    assert target.exists(), f"{page.relative_to(ROOT)} links to {link}: no such file"
    if anchor and target.suffix == ".md":
        assert anchor in anchors(target), f"{page.relative_to(ROOT)} links to {link}: no such heading"
