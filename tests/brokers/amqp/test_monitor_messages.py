"""Monitor messages, and the report fields monitors added: absent from the body while unset."""

from __future__ import annotations

import json

import pytest

from dualplane.brokers.amqp.exceptions import MessageRejected
from dualplane.brokers.amqp.messages import (
    JobSpec,
    MonitorCommand,
    MonitorSpec,
    TaskReport,
    TaskReports,
    decode,
    visit_job_id,
    visit_of,
)

REPORT = TaskReport(task_id="t", job_id="j", trace_id="r", url="http://a/", domain="a", stage="done")


def test_a_report_without_validators_is_encoded_as_before_monitors() -> None:
    for body in (REPORT.encode(), TaskReports(reports=(REPORT,)).encode()):
        assert not {"etag", "last_modified", "fingerprint"} & set(body.decode().replace('"', " ").split())
    kept = TaskReport(**{**REPORT.model_dump(), "etag": '"e"', "fingerprint": "0123"})
    again = decode(TaskReports(reports=(kept,)).encode()).reports[0]
    assert again.validators is not None and again.validators.etag == '"e"' and again.fingerprint == "0123"
    assert json.loads(JobSpec(job_id="j").encode()).keys().isdisjoint({"monitor"})


def test_a_validator_that_would_add_a_header_is_dead_lettered() -> None:
    body = json.loads(REPORT.encode())
    body["etag"] = '"e"\r\nX-Evil: 1'
    with pytest.raises(MessageRejected, match="control characters"):
        decode(json.dumps(body).encode())


def test_a_monitor_spec_round_trips_and_its_intervals_are_checked() -> None:
    job = JobSpec(job_id=visit_job_id("shop", 1), monitor="shop", max_pages=50)
    spec = MonitorSpec(monitor_id="shop", job=job, interval_s=3600, min_interval_s=600, max_interval_s=86_400)
    assert decode(spec.encode()) == spec
    with pytest.raises(MessageRejected, match="must lie within"):
        decode(spec.encode().replace(b'"interval_s":3600', b'"interval_s":60'))
    with pytest.raises(MessageRejected, match="monitor_id"):
        decode(MonitorCommand(monitor_id="shop", action="pause").encode().replace(b'"shop"', b'"a b"'))


def test_visit_job_ids_name_their_monitor_and_number() -> None:
    assert visit_job_id("shop", 3) == "shop-v3"
    assert visit_of("shop-v3", "shop") == 3
    assert visit_of("shop-v3", None) is None
    assert visit_of("shop-vx", "shop") is None
    assert visit_of("shop-2-v3", "shop") is None
