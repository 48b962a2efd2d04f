"""Job ids in control messages: printable text of 1 to 200 characters, checked where a message is
made and where it is read (a CR/LF in one would reach WARC headers, S3 keys and log lines)."""

from __future__ import annotations

import json
import re

import pytest
from pydantic import ValidationError

from dualplane.brokers.amqp.exceptions import MessageRejected
from dualplane.brokers.amqp.messages import CrawlTask, DiscoveredBatch, DiscoveredUrl, JobSpec, decode


@pytest.mark.parametrize("job_id", ["job-1", "Rückruf 2026/11 (retry)", "x" * 200, "a"])
def test_printable_job_ids_are_taken(job_id: str) -> None:
    assert decode(JobSpec(job_id=job_id).encode()).job_id == job_id


@pytest.mark.parametrize(
    ("job_id", "reason"),
    [
        ("a\r\nWARC-Type: response", "control characters such as '\\r'"),
        ("nul\x00", "control characters such as '\\x00'"),
        ("del\x7f", "control characters such as '\\x7f'"),
        ("", "cannot be empty"),
        ("x" * 201, "at most 200 characters, this one has 201"),
    ],
)
def test_a_job_id_with_control_characters_or_out_of_bounds_is_rejected_with_its_reason(
    job_id: str, reason: str
) -> None:
    for kind, fields in (
        ("job", {}),
        ("discovered", {"url": "https://example.com/"}),
        ("task", {"url": "https://example.com/", "domain": "example.com"}),
    ):
        body = json.dumps({"kind": kind, "job_id": job_id, **fields}).encode()
        with pytest.raises(MessageRejected, match=f"job_id: .*{re.escape(reason)}"):
            decode(body)
    fields = {"job_id": job_id, "url": "https://example.com/", "domain": "example.com"}
    for message_type in (JobSpec, DiscoveredUrl, CrawlTask):
        with pytest.raises(ValidationError, match="job id"):
            message_type.model_validate(fields)


def test_a_seed_batch_carries_its_sitemap_lastmods_and_a_batch_of_before_them_still_decodes() -> None:
    old = b'{"kind":"discovered_batch","version":1,"job_id":"j","trace_id":"t","urls":["http://a.test/"]}'
    assert decode(old).lastmods_ms is None
    plain = DiscoveredBatch(job_id="j", urls=("http://a.test/",))
    assert b"lastmods_ms" not in plain.encode()  # unset: a frontier of before it reads every such batch
    with_lastmods = DiscoveredBatch(
        job_id="j", urls=("http://a.test/1", "http://a.test/2"), lastmods_ms=(1, None)
    )
    assert decode(with_lastmods.encode()) == with_lastmods
    with pytest.raises(ValidationError, match="1 lastmods_ms for 2 urls"):
        DiscoveredBatch(job_id="j", urls=("http://a.test/1", "http://a.test/2"), lastmods_ms=(1,))
