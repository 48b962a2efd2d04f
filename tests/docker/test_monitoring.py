"""The compose stack's monitoring (profile ``monitoring``): Prometheus scrapes every app service on its
metrics port, and every query of the Grafana dashboard names a metric the services export."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.paths import REPO_ROOT

pytestmark = pytest.mark.unit

DOCKER = REPO_ROOT / "docker"
SOURCES = ("control_plane", "data_plane", "connectors", "dualplane", "core", "brokers")


def exported_metrics() -> set[str]:
    """Every ``dualplane_*`` metric name the code registers (counters also as ``_total``)."""
    names: set[str] = set()
    for package in SOURCES:
        for path in (REPO_ROOT / package).rglob("*.py"):
            names.update(re.findall(r'"(dualplane_[a-z_]+)"', path.read_text()))
    return names | {f"{name}_total" for name in names} | {f"{name}_bucket" for name in names}


def compose() -> dict[str, Any]:
    loaded = yaml.safe_load((DOCKER / "compose.yaml").read_text())
    assert isinstance(loaded, dict)
    return loaded


def test_prometheus_scrapes_every_app_service_on_the_metrics_port() -> None:
    services = compose()["services"]
    apps = {name for name, service in services.items() if "build" in service}
    config = yaml.safe_load((DOCKER / "prometheus" / "prometheus.yml").read_text())
    (discovery,) = config["scrape_configs"][0]["dns_sd_configs"]
    assert set(discovery["names"]) == apps
    env = services["frontier"]["environment"]
    assert (
        discovery["port"] == int(env["DUALPLANE_METRICS_PORT"]) and env["DUALPLANE_METRICS_BIND"] == "0.0.0.0"
    )
    assert services["prometheus"]["profiles"] == services["grafana"]["profiles"] == ["monitoring"]


def test_every_dashboard_query_names_an_exported_metric() -> None:
    dashboard = json.loads((DOCKER / "grafana" / "dashboards" / "dualplane.json").read_text())
    queried = {
        name
        for panel in dashboard["panels"]
        for target in panel["targets"]
        for name in re.findall(r"\b(dualplane_[a-z_]+)", target["expr"])
    }
    assert len(queried) >= 10
    assert queried <= exported_metrics(), sorted(queried - exported_metrics())
    datasource = yaml.safe_load(Path(DOCKER / "grafana/provisioning/datasources/prometheus.yaml").read_text())
    assert {panel["datasource"]["uid"] for panel in dashboard["panels"]} == {
        datasource["datasources"][0]["uid"]
    }
