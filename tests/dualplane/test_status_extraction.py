"""``dualplane status`` shows what the extractors counted: pages, CPU per page, failed main texts."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from prometheus_client import start_http_server

from dualplane.cli.status_cmd import extraction_line
from dualplane.core.settings import Settings
from dualplane.data_plane.extract.metrics import text_failed
from dualplane.data_plane.extractor.metrics import EXTRACT_CPU_SECONDS
from dualplane.extraction_status import extraction

pytestmark = pytest.mark.unit


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture
def metrics_settings() -> Iterator[Settings]:
    """Settings whose metrics port is this process's endpoint (an extractor's, as far as status sees)."""
    port = _free_port()
    server, thread = start_http_server(port, addr="127.0.0.1")
    settings = Settings.from_env()
    metrics = settings.metrics.model_copy(update={"port": port, "bind": "127.0.0.1"})
    try:
        yield settings.model_copy(update={"metrics": metrics})
    finally:
        server.shutdown()
        thread.join(5)


def test_status_adds_up_the_extractors_pages_cpu_and_failed_main_texts(metrics_settings: Settings) -> None:
    before = extraction(metrics_settings) or {"pages": 0, "text_failures": 0}
    for cpu_s in (0.004, 0.006):
        EXTRACT_CPU_SECONDS.observe(cpu_s)
    text_failed("trafilatura", ValueError("Document is empty"))
    found = extraction(metrics_settings)
    assert found is not None
    assert found["pages"] == before["pages"] + 2
    assert found["text_failures"] == before["text_failures"] + 1
    assert found["text_failures_by_error"]["trafilatura: ValueError"] >= 1
    assert found["cpu_ms_per_page"] > 0
    line = extraction_line(found).plain
    assert "CPU ms/page" in line and "main text failed on" in line and "trafilatura: ValueError" in line


def test_without_a_metrics_port_status_shows_no_extraction_part() -> None:
    settings = Settings.from_env()
    off = settings.model_copy(update={"metrics": settings.metrics.model_copy(update={"port": 0})})
    assert extraction(off) is None
