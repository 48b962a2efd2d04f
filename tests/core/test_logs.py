"""JSON log lines and the page they are about (``DUALPLANE_LOG_FORMAT=json``)."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Iterator

import pytest

from dualplane.core import logs

pytestmark = pytest.mark.unit


@pytest.fixture
def lines() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    handler = logs.configure("debug", "json")
    handler.setStream(stream)  # type: ignore[attr-defined]
    yield stream
    logging.getLogger().removeHandler(handler)


def _records(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_a_line_about_a_page_carries_its_trace_job_and_domain(lines: io.StringIO) -> None:
    log = logging.getLogger("dualplane.test")
    with logs.page_context(trace_id="t-1", job_id="job-1", domain="shop.example", url="http://shop.example/"):
        log.warning("fetched %s", "http://shop.example/")
    log.info("not about a page")

    about, other = _records(lines)
    assert about["trace_id"] == "t-1" and about["job_id"] == "job-1" and about["domain"] == "shop.example"
    assert about["url"] == "http://shop.example/" and about["message"] == "fetched http://shop.example/"
    assert about["level"] == "WARNING" and about["logger"] == "dualplane.test"
    assert str(about["time"]).endswith("Z") and "T" in str(about["time"])
    assert "trace_id" not in other and other["message"] == "not about a page"


def test_each_asyncio_task_keeps_its_own_page(lines: io.StringIO) -> None:
    log = logging.getLogger("dualplane.test")

    async def fetch(n: int) -> None:
        logs.bind_page(trace_id=f"t-{n}", job_id="job", domain=f"d{n}.example")
        await asyncio.sleep(0.01 * (3 - n))  # interleave the tasks
        log.info("page %d", n)

    async def main() -> None:
        await asyncio.gather(*(fetch(n) for n in range(3)))

    asyncio.run(main())
    by_message = {record["message"]: record for record in _records(lines)}
    assert {by_message[f"page {n}"]["trace_id"] for n in range(3)} == {"t-0", "t-1", "t-2"}
    assert all(by_message[f"page {n}"]["domain"] == f"d{n}.example" for n in range(3))


def test_exceptions_stay_inside_one_json_line(lines: io.StringIO) -> None:
    try:
        raise ValueError("bad page")
    except ValueError:
        logging.getLogger("dualplane.test").exception("extraction failed")

    (record,) = _records(lines)
    assert "ValueError: bad page" in str(record["exc_info"])


def test_page_of_reads_the_fields_a_message_has() -> None:
    class Batch:
        job_id = "job-2"
        trace_id = "t-2"

    assert logs.page_of(Batch()) == {"trace_id": "t-2", "job_id": "job-2", "domain": None, "url": None}
