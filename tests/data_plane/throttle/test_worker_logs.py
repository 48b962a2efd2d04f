"""The Faust worker's log lines go through our formatter: they look like every other service's.

``make demo`` showed the throttle processor's lines in Faust's own coloured format (``[2026-…]
[pid] [WARNING] …``), beside our ``time pid LEVEL logger: message`` lines.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from dualplane.data_plane.throttle.app import ThrottleWorker

pytestmark = pytest.mark.unit

OUR_TEXT_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} \d+ WARNING faust\.worker: consumer slow$")


@pytest.fixture
def root_logging() -> Iterator[None]:
    """The root logger's handlers and level as they were, after the test replaced them."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def set_up_like_faust(log_format: str, level: int) -> None:
    worker = SimpleNamespace(app=SimpleNamespace(log_format=log_format), spinner=object())
    root = logging.getLogger()
    root.addHandler(logging.StreamHandler())  # Faust's own handler, installed before the hook runs
    ThrottleWorker.on_setup_root_logger(worker, root, level)  # type: ignore[arg-type]
    assert worker.spinner is None


def test_a_faust_warning_is_a_line_of_our_text_format(
    root_logging: None, capsys: pytest.CaptureFixture[str]
) -> None:
    set_up_like_faust("text", logging.WARNING)
    logging.getLogger("faust.worker").info("starting")  # below the worker's level: nothing
    logging.getLogger("faust.worker").warning("consumer slow")
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and OUR_TEXT_LINE.match(lines[0]), lines


def test_with_json_logs_a_faust_warning_is_a_json_object(
    root_logging: None, capsys: pytest.CaptureFixture[str]
) -> None:
    set_up_like_faust("json", logging.WARNING)
    logging.getLogger("faust.worker").warning("consumer slow")
    [line] = capsys.readouterr().err.splitlines()
    record = json.loads(line)
    assert (record["level"], record["logger"], record["message"]) == (
        "WARNING",
        "faust.worker",
        "consumer slow",
    )
