"""``DUALPLANE_NAMESPACE`` and ``namespace list | drop`` against the real brokers, through the CLI."""

from __future__ import annotations

import uuid

import pytest

from dualplane.brokers.kafka import clients
from dualplane.brokers.kafka.topics import ensure_data_plane_topics
from dualplane.core.settings import Settings
from dualplane.namespaces import named_namespace
from tests.support.cli import run_cli

pytestmark = [pytest.mark.e2e]


def test_a_namespace_set_in_the_environment_is_listed_read_and_dropped(settings: Settings) -> None:
    name = f"ns-{uuid.uuid4().hex[:8]}"
    spaced = named_namespace(settings, name)
    ensure_data_plane_topics(spaced)
    env = {**settings.to_env(), "DUALPLANE_NAMESPACE": name}

    listed = run_cli("namespace", "list", "--json", env=env)
    assert listed.exit_code == 0, listed.stderr
    assert any(entry["namespace"] == name and entry["topics"] >= 5 for entry in listed.json())

    # Read from the environment alone: the empty namespace has no latest record of this URL.
    latest = run_cli("records", "latest", "--url", "http://nowhere.example/", env=env)
    assert latest.exit_code == 1 and f"dualplane-{name}.records.latest" in latest.stderr, latest.stderr
    assert "not a dualplane setting" not in latest.stderr

    refused = run_cli("namespace", "drop", name, env=env)
    assert refused.exit_code == 2 and "--yes" in refused.stderr
    dropped = run_cli("namespace", "drop", name, "--yes", "--json", env=env)
    assert dropped.exit_code == 0 and dropped.json() == {"namespace": name, "dropped": True}, dropped.stderr
    left = clients.admin(settings.kafka).list_topics(timeout=10).topics
    assert not [topic for topic in left if topic.startswith(f"dualplane-{name}.")]
