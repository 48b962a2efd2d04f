"""JSON from outside is parsed only when its nesting is bounded."""

from __future__ import annotations

import json

import pika
import pytest

from dualplane.brokers.amqp.dead_letters import DeadLetter
from dualplane.brokers.amqp.exceptions import MessageRejected
from dualplane.brokers.amqp.messages import DiscoveredBatch, decode
from dualplane.core.json_bounds import JsonTooDeep, loads_bounded, nesting_depth

pytestmark = pytest.mark.unit

DEEP = b"[" * 50_000 + b"]" * 50_000


def test_brackets_inside_strings_do_not_count() -> None:
    assert nesting_depth(json.dumps({"a": [1, {"b": 'x"[[[[\\'}]}).encode()) == 3
    assert loads_bounded(json.dumps({"u": "[" * 500}).encode()) == {"u": "[" * 500}


def test_deep_nesting_is_refused_before_parsing() -> None:
    with pytest.raises(JsonTooDeep, match="nested 50000 levels deep"):
        loads_bounded(DEEP)
    with pytest.raises(RecursionError):  # what the bound is there for
        json.loads(DEEP)


def test_a_deep_control_message_is_rejected_with_a_reason() -> None:
    with pytest.raises(MessageRejected, match=r"JSON nested 50001 levels deep .* body starts '\{\"urls\""):
        decode(b'{"urls":' + DEEP + b"}", DiscoveredBatch)


def test_a_deep_dead_letter_still_parses_for_dlq_list() -> None:
    letter = DeadLetter.parse(pika.BasicProperties(headers={"x-dualplane-reason": "poison"}), DEEP)
    assert letter.reason == "poison" and letter.job_id is None
