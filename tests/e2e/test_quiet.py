"""Quiet by default: a service at WARNING prints neither Faust's start-up banner nor raw librdkafka lines,
and whatever it does print is in our log format.

``make demo`` showed both in its live view: the throttle processor's banner (``ƒaµS† v0.x…`` and a
table of its settings) and librdkafka's ``%4|…|GETPID|…``. The throttle service (a Faust child and
confluent-kafka clients) is run at the demo's level until its consumer group is stable, and its whole
output is read.
"""

from __future__ import annotations

import re
import signal
from pathlib import Path

import pytest

from tests.support.factories import ControlPlaneFactory
from tests.support.pipeline import Pipeline, wait_stable

pytestmark = pytest.mark.e2e

RAW_LIBRDKAFKA = re.compile(r"^%\d\|")
BANNER = re.compile(r"ƒaµS†|^\| (transport|datadir|hostname) ")
# Our text format (core.logs), which Faust's own lines now go through too: time, process, level, logger.
OUR_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} \d+ (WARNING|ERROR|CRITICAL) [\w.]+: ")


def test_the_throttle_service_at_warning_prints_no_banner_and_no_raw_librdkafka_line(
    control_plane: ControlPlaneFactory, tmp_path: Path
) -> None:
    settings = control_plane.settings()
    pipeline = Pipeline(settings, tmp_path)
    try:
        process = pipeline.start("throttle", log_level="warning")
        wait_stable(settings, settings.throttle_app_id)
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0, pipeline.logs()
    finally:
        pipeline.stop_all()
    lines = (tmp_path / "throttle-0.log").read_text(errors="replace").splitlines()
    assert [line for line in lines if BANNER.search(line)] == [], lines[:20]
    assert [line for line in lines if RAW_LIBRDKAFKA.match(line)] == [], lines[:20]
    assert [line for line in lines if line.strip() and not OUR_LINE.match(line)] == [], lines[:20]
