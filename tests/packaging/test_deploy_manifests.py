"""deploy/kubernetes and deploy/keda: the shape of every object (a JSON schema of the fields that
Kubernetes and KEDA require and that these files use), the references between them, and that the
triggers name what the platform really makes: the lane queues, the extractor's group and topic,
and metrics the code exports. No cluster is needed.

The schemas are written here from the Kubernetes apps/v1 and KEDA v1alpha1 (ScaledObject,
TriggerAuthentication) references, limited to what the files use: an unknown key at a level the
schema lists is refused (a typo such as ``scaleTargetref`` would otherwise be ignored by KEDA).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from dualplane.brokers.amqp.lanes import PRIORITIES
from dualplane.brokers.amqp.topology import Topology
from dualplane.core.settings import Settings, env_names
from tests.support.paths import REPO_ROOT

pytestmark = pytest.mark.unit

DEPLOY = REPO_ROOT / "deploy"
STRING_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
NAME_REF = {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}
METADATA = {
    "type": "object",
    "required": ["name"],
    "additionalProperties": False,
    "properties": {"name": {"type": "string"}, "labels": STRING_MAP, "annotations": STRING_MAP},
}


def _object(api_version: str, kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["apiVersion", "kind", "metadata", "spec"],
        "additionalProperties": False,
        "properties": {
            "apiVersion": {"const": api_version},
            "kind": {"const": kind},
            "metadata": METADATA,
            "spec": spec,
        },
    }


CONTAINER = {
    "type": "object",
    "required": ["name", "image"],
    "properties": {
        "name": {"type": "string"},
        "image": {"type": "string"},
        "args": {"type": "array", "items": {"type": "string"}},
        "envFrom": {
            "type": "array",
            "items": {
                "type": "object",
                "minProperties": 1,
                "maxProperties": 1,
                "properties": {"configMapRef": NAME_REF, "secretRef": NAME_REF},
                "additionalProperties": False,
            },
        },
        "ports": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["containerPort"],
                "properties": {"containerPort": {"type": "integer"}},
            },
        },
        "livenessProbe": {"type": "object"},
        "resources": {"type": "object"},
    },
    "additionalProperties": False,
}
DEPLOYMENT = _object(
    "apps/v1",
    "Deployment",
    {
        "type": "object",
        "required": ["selector", "template"],
        "additionalProperties": False,
        "properties": {
            "replicas": {"type": "integer", "minimum": 0},
            "selector": {
                "type": "object",
                "required": ["matchLabels"],
                "properties": {"matchLabels": STRING_MAP},
            },
            "template": {
                "type": "object",
                "required": ["metadata", "spec"],
                "properties": {
                    "metadata": {
                        "type": "object",
                        "properties": {"labels": STRING_MAP, "annotations": STRING_MAP},
                    },
                    "spec": {
                        "type": "object",
                        "required": ["containers"],
                        "properties": {
                            "terminationGracePeriodSeconds": {"type": "integer"},
                            "containers": {"type": "array", "minItems": 1, "items": CONTAINER},
                        },
                    },
                },
            },
        },
    },
)
TRIGGER = {
    "type": "object",
    "required": ["type", "metadata"],
    "additionalProperties": False,
    "properties": {
        "type": {"enum": ["rabbitmq", "kafka", "prometheus"]},
        "metricType": {"enum": ["AverageValue", "Value", "Utilization"]},
        "authenticationRef": NAME_REF,
        "metadata": STRING_MAP,  # KEDA reads every trigger parameter as a string
    },
}
SCALED_OBJECT = _object(
    "keda.sh/v1alpha1",
    "ScaledObject",
    {
        "type": "object",
        "required": ["scaleTargetRef", "triggers"],
        "additionalProperties": False,
        "properties": {
            "scaleTargetRef": NAME_REF,
            "minReplicaCount": {"type": "integer", "minimum": 0},
            "maxReplicaCount": {"type": "integer", "minimum": 1},
            "pollingInterval": {"type": "integer", "minimum": 1},
            "cooldownPeriod": {"type": "integer", "minimum": 0},
            "triggers": {"type": "array", "minItems": 1, "items": TRIGGER},
        },
    },
)
TRIGGER_AUTHENTICATION = _object(
    "keda.sh/v1alpha1",
    "TriggerAuthentication",
    {
        "type": "object",
        "required": ["secretTargetRef"],
        "additionalProperties": False,
        "properties": {
            "secretTargetRef": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["parameter", "name", "key"],
                    "additionalProperties": False,
                    "properties": {
                        "parameter": {"type": "string"},
                        "name": {"type": "string"},
                        "key": {"type": "string"},
                    },
                },
            }
        },
    },
)
DATA_OBJECT = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata"],
    "properties": {
        "apiVersion": {"const": "v1"},
        "metadata": METADATA,
        "data": STRING_MAP,
        "stringData": STRING_MAP,
    },
}
SCHEMAS = {
    "Deployment": DEPLOYMENT,
    "ScaledObject": SCALED_OBJECT,
    "TriggerAuthentication": TRIGGER_AUTHENTICATION,
    "ConfigMap": DATA_OBJECT,
    "Secret": DATA_OBJECT,
}


def _documents() -> Iterator[tuple[Path, dict[str, Any]]]:
    for path in sorted(DEPLOY.glob("*/*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            yield path, document


@pytest.fixture(scope="module")
def objects() -> dict[tuple[str, str], dict[str, Any]]:
    found = {}
    for _path, document in _documents():
        found[(document["kind"], document["metadata"]["name"])] = document
    return found


def test_every_object_has_the_shape_its_kind_requires() -> None:
    kinds = []
    for path, document in _documents():
        kinds.append(document["kind"])
        jsonschema.validate(document, SCHEMAS[document["kind"]])  # KeyError: a kind with no schema here
        assert path.parent.name == ("keda" if document["apiVersion"].startswith("keda.sh/") else "kubernetes")
    assert sorted(set(kinds)) == sorted(SCHEMAS)


def test_a_misspelt_field_is_refused_by_the_schema(objects: dict[tuple[str, str], dict[str, Any]]) -> None:
    scaled = objects[("ScaledObject", "dualplane-fetcher")]
    broken = {**scaled, "spec": {**scaled["spec"], "scaleTargetref": scaled["spec"]["scaleTargetRef"]}}
    with pytest.raises(jsonschema.ValidationError, match="scaleTargetref"):
        jsonschema.validate(broken, SCALED_OBJECT)


def test_references_between_the_objects_resolve(objects: dict[tuple[str, str], dict[str, Any]]) -> None:
    for (kind, name), document in objects.items():
        if kind == "ScaledObject":
            target = objects[("Deployment", document["spec"]["scaleTargetRef"]["name"])]
            assert target, name
            for trigger in document["spec"]["triggers"]:
                if "authenticationRef" in trigger:
                    assert ("TriggerAuthentication", trigger["authenticationRef"]["name"]) in objects
        if kind == "TriggerAuthentication":
            for ref in document["spec"]["secretTargetRef"]:
                assert ref["key"] in objects[("Secret", ref["name"])]["stringData"], ref
        if kind == "Deployment":
            template = document["spec"]["template"]
            labels = template["metadata"]["labels"]
            assert document["spec"]["selector"]["matchLabels"].items() <= labels.items(), name
            for container in template["spec"]["containers"]:
                for source in container["envFrom"]:
                    ((ref_kind, ref),) = source.items()
                    assert (("ConfigMap" if ref_kind == "configMapRef" else "Secret"), ref["name"]) in objects


def test_the_settings_are_dualplane_settings_and_read_as_such(
    objects: dict[tuple[str, str], dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    environment = {
        **objects[("ConfigMap", "dualplane-settings")]["data"],
        **objects[("Secret", "dualplane-secrets")]["stringData"],
    }
    dualplane = {name: value for name, value in environment.items() if name.startswith("DUALPLANE_")}
    assert set(dualplane) <= env_names(), set(dualplane) - env_names()
    for name, value in dualplane.items():
        monkeypatch.setenv(name, value)
    settings = Settings.from_env()
    assert len(settings.amqp.urls()) == 3 and len(settings.amqp.management_urls()) == 3
    assert len(settings.kafka.bootstrap_servers.split(",")) == 3
    assert (settings.kafka.replication_factor, settings.kafka.min_insync_replicas) == (3, 2)


def test_the_fetchers_scale_on_the_lanes_and_their_wait(
    objects: dict[tuple[str, str], dict[str, Any]],
) -> None:
    triggers = {t["type"]: t for t in objects[("ScaledObject", "dualplane-fetcher")]["spec"]["triggers"]}
    rabbitmq = triggers["rabbitmq"]["metadata"]
    assert (rabbitmq["protocol"], rabbitmq["useRegex"], rabbitmq["operation"]) == ("http", "true", "sum")
    topology = Topology(Settings().queues)
    lanes = {topology.lane_queue(priority) for priority in PRIORITIES}
    matched = {queue for queue in topology.control_queues() if re.search(rabbitmq["queueName"], queue)}
    assert matched == lanes, "the trigger must count the three lanes and no other queue"
    prometheus = triggers["prometheus"]
    assert prometheus["metricType"] == "Value", "a wait is a level to hold, not a total to share out"
    assert _metrics_named(prometheus["metadata"]["query"]) == {"dualplane_lane_wait_seconds"}


def test_the_extractors_scale_on_their_lag_bounded_by_the_partitions(
    objects: dict[tuple[str, str], dict[str, Any]],
) -> None:
    scaled = objects[("ScaledObject", "dualplane-extractor")]
    (kafka,) = scaled["spec"]["triggers"]
    settings = Settings()
    assert kafka["metadata"]["consumerGroup"] == f"{settings.kafka.group_prefix}-extractor"
    assert kafka["metadata"]["topic"] == settings.topics.pages_raw
    configured = objects[("ConfigMap", "dualplane-settings")]["data"]
    assert kafka["metadata"]["bootstrapServers"] == configured["DUALPLANE_KAFKA_BOOTSTRAP_SERVERS"]
    assert scaled["spec"]["maxReplicaCount"] <= int(configured["DUALPLANE_TOPIC_PARTITIONS"])
    (container,) = objects[("Deployment", "dualplane-extractor")]["spec"]["template"]["spec"]["containers"]
    assert container["args"][:4] == ["run", "extractor", "--processes", "1"], "one consumer per pod"


def test_every_metric_the_manifests_and_the_guide_name_is_exported_by_the_code() -> None:
    named = set()
    for path in [*DEPLOY.glob("*/*.yaml"), REPO_ROOT / "docs" / "multi-machine.md"]:
        named |= _metrics_named(path.read_text())
    assert "dualplane_lane_wait_seconds" in named and "dualplane_queue_consumers" in named
    # os.walk, not rglob: dualplane/<folder> are symlinks to the top-level folders.
    package = [
        Path(top, name)
        for top, _, names in os.walk(REPO_ROOT / "dualplane", followlinks=True)
        for name in names
    ]
    source = "\n".join(path.read_text() for path in package if path.suffix == ".py")
    missing = {name for name in named if f'"{name}"' not in source}
    assert not missing, f"named but exported nowhere: {missing}"


def _metrics_named(text: str) -> set[str]:
    """dualplane metric names in ``text``, without the suffixes Prometheus adds to series."""
    names = set(re.findall(r"\bdualplane_[a-z_]+[a-z]", text))
    return {re.sub(r"_(bucket|count|sum|total)$", "", name) for name in names}
