"""The user-defined extractor's headline case, against the real brokers: install a plugin, crawl with it,
change it, replay, and read the new version's records.

The example plugin (``examples/reviews-extractor``) is installed with pip into a directory of its own
and put on the services' ``PYTHONPATH``, as a user would install it next to dualplane; version 1.1.0
is the same package with a rule added and its version bumped.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dualplane.core.settings import FetchSettings, LimitSettings, Settings
from dualplane.data_plane.extractor.records import PageRecord, iter_records
from dualplane.sample_site import SampleSite, SiteSpec
from tests.support.cli import run_cli
from tests.support.factories import ControlPlaneFactory
from tests.support.frontier import JobProbe
from tests.support.paths import REPO_ROOT
from tests.support.pipeline import Pipeline

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

EXAMPLE = REPO_ROOT / "examples" / "reviews-extractor"
SITE = SiteSpec(seed=11, hosts=1, pages_per_host=20, latency_ms=5)


def install(source: Path, target: Path) -> dict[str, str]:
    """``pip install --target`` the plugin; the environment that puts it on a service's path."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--target",
            str(target),
            str(source),
        ],
        check=True,
        timeout=300,
    )
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(target), os.environ.get("PYTHONPATH")]))}


def changed_plugin(tmp_path: Path) -> Path:
    """Version 1.1.0 of the example: a rule for the product's name added, the version bumped."""
    source = tmp_path / "reviews-1.1.0"
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    module = source / "dualplane_reviews" / "__init__.py"
    code = module.read_text().replace('version = "1.0.0"', 'version = "1.1.0"')
    rules = "RULES: dict[str, tuple[str, str, Callable[[str], Any]]] = {"
    assert rules in code
    code = code.replace(rules, rules + '\n    "name": ("h1", r"(.+)", str),')
    module.write_text(code)
    project = source / "pyproject.toml"
    project.write_text(project.read_text().replace('version = "1.0.0"', 'version = "1.1.0"'))
    return source


@pytest.fixture
def settings(control_plane: ControlPlaneFactory) -> Settings:
    return control_plane.settings().model_copy(
        update={
            "limits": LimitSettings(domain_concurrency=3, domain_delay_ms=10, fetch_concurrency=12),
            "fetch": FetchSettings(allow_hosts="127.0.0.1", permit_wait_s=0.5),
        }
    )


@pytest.fixture
def site() -> Iterator[SampleSite]:
    with SampleSite(SITE) as running:
        yield running


def records_of(settings: Settings, topic: str, count: int) -> dict[str, PageRecord]:
    topical = settings.model_copy(update={"topics": settings.topics.model_copy(update={"records": topic})})
    deadline = time.monotonic() + 120
    while True:
        found = {record.canonical_url: record for record in iter_records(topical, follow=False)}
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(2)


def test_install_crawl_change_replay(settings: Settings, site: SampleSite, tmp_path: Path) -> None:
    first = install(EXAMPLE, tmp_path / "v1")
    second = install(changed_plugin(tmp_path), tmp_path / "v2")
    pipeline = Pipeline(settings, tmp_path)
    try:
        for service in ("frontier", "fetcher", "extractor"):
            pipeline.start(service, env=first)
        crawled = run_cli(
            "crawl", "--seed", site.seeds[0], "--job", "plugin-job", "--extractor", "reviews",
            env=settings.to_env(),
        )  # fmt: skip
        assert crawled.exit_code == 0, crawled.stderr
        JobProbe(settings).wait_finished("plugin-job", timeout_s=240)
        pages = len(site.reachable_urls())
        crawl_records = records_of(settings, settings.topics.records, pages)
    finally:
        pipeline.stop_all()
    replayed = run_cli(
        "replay", "--schema-version", "3", "--to-topic", f"{settings.topics.records}.v2", "--json",
        env={**settings.to_env(), **second},
    )  # fmt: skip
    assert replayed.exit_code == 0, replayed.stderr
    replay_records = records_of(settings, f"{settings.topics.records}.v2", len(crawl_records))

    assert crawl_records and set(replay_records) == set(crawl_records), replayed.stdout
    assert {r.extractor_version for r in crawl_records.values()} == {"reviews/1.0.0"}
    assert {r.extractor_version for r in replay_records.values()} == {"reviews/1.1.0"}
    rated = [url for url, record in crawl_records.items() if record.data is not None]
    assert rated, "product pages have ratings"
    for url in rated:
        before, after = crawl_records[url].data, replay_records[url].data
        assert before is not None and after is not None and after.schema_ == "reviews/1"
        assert set(before.value()) == {"rating", "reviews"}
        changed = after.value()
        assert changed.pop("name") and changed == before.value()  # the new rule, and the old ones unchanged
    assert replayed.json()["result"]["records"] == len(crawl_records)
