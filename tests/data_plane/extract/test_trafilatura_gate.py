"""The trafilatura shortcuts are entered only on the release they were written for; failures are counted."""

from __future__ import annotations

import importlib
import logging
from typing import Any

import pytest
import trafilatura
from prometheus_client import REGISTRY

from dualplane.data_plane.extract.text import _trafilatura, text
from dualplane.data_plane.extract.text._trafilatura import WRITTEN_FOR, shortcuts_for

pytestmark = pytest.mark.unit

PARAGRAPH = (
    "<p>The harbour board met on Tuesday to weigh the dredging plan, which would deepen the channel by "
    "two metres and let the larger ferries berth at low tide without waiting for the flood.</p>"
)
NEWS = (
    "<html><head><title>Harbour</title></head><body><nav><a href='/'>Home</a> <a href='/news'>News</a></nav>"
    f"<div class='story'><h1>Dredging plan weighed</h1>{PARAGRAPH * 8}</div>"
    "<footer><p>Copyright 2026 The Harbour Times</p></footer></body></html>"
)


@pytest.fixture(autouse=True)
def _warnings_anew() -> None:
    _trafilatura._warn_once.cache_clear()


def test_the_installed_release_is_the_one_the_shortcuts_were_written_for() -> None:
    # constraints.txt pins it: an upgrade must come with the shortcuts' tests run again on it.
    assert trafilatura.__version__ == WRITTEN_FOR
    assert set(shortcuts_for(WRITTEN_FOR)) == set(_trafilatura.SHORTCUTS) == set(vars(text)["SHORTCUTS"])
    assert vars(text)["SHORTCUTS"] is _trafilatura.SHORTCUTS  # the dict our calls enter
    assert len(_trafilatura.SHORTCUTS) == 4


def test_another_release_runs_plain_trafilatura_and_says_so_once(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger=_trafilatura.__name__):
        assert shortcuts_for("2.4.0") == {}
        assert shortcuts_for("2.4.0") == {}
    warnings = [record.getMessage() for record in caplog.records]
    assert len(warnings) == 1
    assert (
        "trafilatura 2.4.0" in warnings[0]
        and WRITTEN_FOR in warnings[0]
        and "plain trafilatura" in warnings[0]
    )


def test_a_release_without_a_replaced_name_runs_plain_trafilatura(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delattr(importlib.import_module("trafilatura.xpaths"), "BODY_XPATH")
    with caplog.at_level(logging.WARNING, logger=_trafilatura.__name__):
        assert shortcuts_for(WRITTEN_FOR) == {}
    assert "trafilatura.xpaths.BODY_XPATH" in caplog.text


def test_plain_trafilatura_reads_the_same_text(monkeypatch: pytest.MonkeyPatch) -> None:
    with_shortcuts = text.main_text(NEWS, "https://news.example/harbour")
    monkeypatch.setattr(text, "SHORTCUTS", {})
    assert with_shortcuts is not None and "dredging plan" in with_shortcuts
    assert text.main_text(NEWS, "https://news.example/harbour") == with_shortcuts


def _failures(error: str) -> float:
    labels = {"engine": "trafilatura", "error": error}
    return REGISTRY.get_sample_value("dualplane_extract_text_failures_total", labels) or 0.0


def test_a_failure_of_the_text_step_is_counted_and_logged(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*_args: Any, **_kwargs: Any) -> str:
        raise ValueError("lxml: Document is empty")

    monkeypatch.setattr(trafilatura, "extract", broken)
    before = _failures("ValueError")
    with caplog.at_level(logging.WARNING, logger=text.__name__):
        assert text.main_text(NEWS, "https://news.example/harbour") is None
    # The page route reads the page once: one failure, said where an operator looks.
    assert _failures("ValueError") == before + 1
    assert "trafilatura failed on https://news.example/harbour (ValueError" in caplog.text
