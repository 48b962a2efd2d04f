"""The bad-input corpus (tests/support/bad_input.py) through the fetch path and the extractor.

Each case is fetched over real HTTP by the fetcher's own backend (SSRF guard, size cap, overall
deadline, redirects), classified as the fetcher classifies it, and a page fetched is extracted as
the extractor extracts it. What happened is described in the table's words and must equal the
table's expected outcome; docs/testing.md shows the same table (a test compares it). The broker side
of bad input (poison messages, 8 KB links at the frontier, dead letters) has its own tests.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
from aiohttp.test_utils import TestServer
from prometheus_client import REGISTRY

from dualplane.control_plane.fetcher.backends.base import FetchRequest
from dualplane.control_plane.fetcher.backends.direct import DirectBackend
from dualplane.control_plane.fetcher.classify import classify
from dualplane.control_plane.fetcher.exceptions import FetchFailed
from dualplane.core.web.ssrf import SsrfGuard
from dualplane.data_plane.extract.offline import raw_page
from dualplane.data_plane.extract.record import extract_record
from tests.support.bad_input import CASES, Case, make_app, markdown_table
from tests.support.paths import REPO_ROOT

pytestmark = [pytest.mark.unit, pytest.mark.anyio]  # real HTTP on loopback, no brokers
SCHEMES = ("javascript", "mailto", "tel", "data", "ftp", "file", "other")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def base_url() -> AsyncIterator[str]:
    async with TestServer(make_app(), host="127.0.0.1") as server:
        yield f"http://127.0.0.1:{server.port}"


def _counted() -> dict[str, float]:
    names = {"replaced": ("dualplane_extract_replaced_characters_total", {})}
    names |= {s: ("dualplane_extract_skipped_links_total", {"scheme": s}) for s in SCHEMES}
    return {key: REGISTRY.get_sample_value(name, labels) or 0.0 for key, (name, labels) in names.items()}


async def _outcome(url: str) -> str:
    request = FetchRequest(url, "dualplane-test/1.0", connect_timeout_s=2.0, read_timeout_s=2.0,
                           max_bytes=5 * 1024 * 1024, max_redirects=5, total_timeout_s=1.0)  # fmt: skip
    async with DirectBackend(SsrfGuard(["127.0.0.1"])) as backend:
        try:
            response = await backend.fetch(request)
        except FetchFailed as error:
            return f"refused: {type(error).__name__} ({error.outcome.value})"
    verdict = classify(response)
    if verdict.outcome.value != "ok":
        after = f", retry after {verdict.retry_after_s:.0f} s" if verdict.retry_after_s else ""
        loop = " (returned at the repeat)" if response.redirect_chain else ""
        return f"{verdict.outcome.value}{loop}{after}"
    before = _counted()
    page = raw_page(response.body, response.final_url, fetched_at=datetime.now(UTC),
                    content_type=response.content_type, charset=response.charset)  # fmt: skip
    record = extract_record(page)
    return f"ok → {_facts(record, {k: v - before[k] for k, v in _counted().items()})}"


def _facts(record: dict[str, object], counted: dict[str, float]) -> str:
    links = record["links"]
    assert isinstance(links, list)
    facts = ["record with text" if record["text"] else "record without text"]
    if links:
        facts.append(f"{len(links)} link{'s' if len(links) > 1 else ''}")
    skipped = [f"{s} {counted[s]:.0f}" for s in sorted(SCHEMES) if counted[s]]
    if skipped:
        facts.append("skipped " + ", ".join(skipped))
    if counted["replaced"]:
        facts.append(f"{counted['replaced']:.0f} U+FFFD counted")
    return ", ".join(facts)


@pytest.mark.parametrize("case", CASES, ids=[case.path for case in CASES])
async def test_each_bad_input_ends_as_the_table_says(base_url: str, case: Case) -> None:
    assert await _outcome(base_url + case.path) == case.expected


def test_the_testing_page_shows_the_table_the_test_checks() -> None:
    page = (REPO_ROOT / "docs" / "testing.md").read_text()
    assert markdown_table() in page, "docs/testing.md's bad-input table differs: paste markdown_table()"
