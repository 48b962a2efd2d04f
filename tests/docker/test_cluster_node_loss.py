"""A broker node of each kind lost for good mid-crawl, on the cluster compose file and a real engine.

The cluster (docker/compose.cluster.yaml: three KRaft nodes, three RabbitMQ nodes) crawls the sample
site with two fetchers and two extractors. Once the site has served some pages, the first Kafka node
and the first RabbitMQ node (the ones every client tries first) are removed with their volumes and
never come back. The job must finish with every page of the site's ground truth fetched and exactly
one committed record per page, and ``status`` must report what is short of copies. Then a fresh
node of each joins and docs/multi-machine.md's commands bring replication back to full, which
``status`` confirms; topics made by a process started with replication factor 1 are then
reported. The tests run in file
order against one stack (module fixture); the images are the compose test's
(``scripts/compose-local.sh prepare``, the app image of this checkout).

CI runs it (``.ci/run``, as every compose test). Alone: ``pytest tests/docker/test_cluster_node_loss.py -s``
(7 to 13 minutes here, 1.5 to 4 of them for the cluster to come up; the retry relay in each fetcher hands
the delay tiers' tasks on after the loss, which RabbitMQ 3.10.8's dead-letter worker did not:
docs/multi-machine.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.compose import (
    COMPOSE_FILES,
    REQUIRE_VARIABLE,
    ComposeProject,
    EngineUnavailable,
    machine_lock,
    prepare_engine,
)

pytestmark = [pytest.mark.compose, pytest.mark.slow, pytest.mark.timeout(2400)]

FILES = (*COMPOSE_FILES[:2], "docker/compose.cluster.yaml", COMPOSE_FILES[2])
LOCAL_IMAGES = (
    ("DUALPLANE_KAFKA_IMAGE", "dualplane-local/kafka:3.9.1"),
    ("DUALPLANE_RABBITMQ_IMAGE", "dualplane-local/rabbitmq:debian"),
)
# No S3 sink: nothing here reads the archive, and each app container is a Python start on two cores.
UP = "docker compose up -d --build --wait --scale fetcher=2 --scale extractor=2 --scale s3-sink=0"
JOB = "cluster-loss"
CRAWL = (
    "docker compose exec -T frontier dualplane crawl --seed http://sample-site:8100/ "
    f"--seed http://sample-site:8101/ --seed http://sample-site:8102/ --job {JOB} --wait --json"
)
LOST = ("kafka", "rabbitmq")  # service names: the first node of each, and its volume
LOSE_AFTER_PAGES = 20
SITE_PORT = 8100
ONE_COPY = "one-copy"  # the namespace whose topics are made with one copy
MAKE_TOPICS = (
    "from dualplane.brokers.kafka.topics import ensure_data_plane_topics\n"
    "from dualplane.cli.namespace import settings_in\n"
    f"ensure_data_plane_topics(settings_in({ONE_COPY!r}))\n"
)
STALL_S = 300
CRAWL_WITHIN_S = 1200
TIMINGS: dict[str, float] = {}


@pytest.fixture(scope="module")
def cluster(request: pytest.FixtureRequest) -> Iterator[ComposeProject]:
    """The cluster, up and healthy; taken down with every volume at the end regardless, after
    printing every service's last log lines if a test of this module failed."""
    with machine_lock():
        try:
            seconds = prepare_engine()
        except EngineUnavailable as error:
            if os.environ.get(REQUIRE_VARIABLE) == "1":
                pytest.fail(f"compose tests required ({REQUIRE_VARIABLE}=1) but {error}", pytrace=False)
            pytest.skip(f"not run: {error}")
        print(f"\ncompose-local.sh prepare: {seconds:.0f} s")
        stack = ComposeProject.for_this_checkout(
            "cluster", files=FILES, variables=LOCAL_IMAGES, app_image=ComposeProject.for_this_checkout().image
        )
        down = ("--profile", "spare", "down", "-v", "--remove-orphans")
        stack.compose(*down)  # what an interrupted run left behind
        failed_before = request.session.testsfailed
        # Everything from the first `up` on is undone in `finally`, whatever fails or times out (the
        # `up` itself, pytest-timeout's alarm, the log printing): the compose tests after this one run
        # on the same engine, and a cluster left running would take most of the machine from them.
        try:
            started = time.monotonic()
            up = _up(stack)
            TIMINGS["up_s"] = time.monotonic() - started
            assert up.returncode == 0, f"{up.stderr[-3000:]}\n{stack.compose('logs', '--tail', '30').stdout}"
            yield stack
        finally:
            try:
                print(f"\ntimings: { {name: round(value) for name, value in TIMINGS.items()} }")
                if request.session.testsfailed > failed_before:
                    logs = stack.compose("logs", "--timestamps", "--tail", "40").stdout
                    print(f"\nlast log lines of every service:\n{logs[-60000:]}")
            finally:
                stack.compose(*down)


def test_every_topic_and_quorum_queue_is_replicated_three_times(cluster: ComposeProject) -> None:
    replication = _status(cluster)["replication"]
    assert replication["alarms"] == [], replication
    assert replication["kafka"]["brokers"] == 3 and replication["kafka"]["wanted_replicas"] == 3
    assert replication["rabbitmq"] == {"nodes": 3, "running": 3, "wanted_members": 3, "short": {}}


def test_a_crawl_survives_a_kafka_and_a_rabbitmq_node_lost_for_good(cluster: ComposeProject) -> None:
    site = f"http://{cluster.host_address('sample-site', SITE_PORT)}"
    crawl = cluster.popen(CRAWL)
    try:
        served = _wait_for_pages(site, crawl)
        lost_at = time.monotonic()
        _lose_for_good(cluster, LOST)
        stdout, stderr = _wait_for_the_crawl(site, crawl)
    finally:
        crawl.kill()
    TIMINGS["loss_to_job_end_s"] = time.monotonic() - lost_at
    if crawl.returncode != 0:  # what the services said, before the fixture takes them down
        view = cluster.compose("exec", "-T", "frontier", "dualplane", "status", "--json", timeout_s=180)
        logs = cluster.compose("logs", "--tail", "60", "frontier", "fetcher", "throttle").stdout
        print(f"\nstatus: {view.stdout[-6000:]}\nqueues:\n{_queues(cluster)}\nlogs:\n{logs[-20000:]}")
    assert crawl.returncode == 0, stderr[-3000:]
    summary = json.loads(stdout)
    print(f"\npages served before the loss: {served}; job: {summary['progress']}")
    assert summary["finished"] and summary["progress"]["dead_lettered"] == 0, summary["why"]

    truth = httpx.get(f"{site}/_truth", timeout=30).json()
    expected = {item["url"] for kind in ("products", "articles") for item in truth[kind]}
    fetched = _pages_fetched(site)
    records = Counter(_recorded_urls(cluster))
    twice = {url: n for url, n in fetched.items() if n > 1}
    print(f"pages fetched {len(fetched)}, fetched more than once {twice}; records {sum(records.values())}")
    print(f"tasks the fetchers' retry relays handed back to their lanes: {_relayed(cluster)}")
    assert expected and not expected - set(fetched), f"never fetched: {sorted(expected - set(fetched))[:5]}"
    assert not expected - set(records), f"no record for {sorted(expected - set(records))[:5]}"
    duplicates = {url: n for url, n in records.items() if n > 1}
    assert not duplicates, f"more than one committed record for {duplicates}"

    alarms = _status(cluster)["replication"]["alarms"]
    print("status after the loss:\n  " + "\n  ".join(alarms))
    assert any("under-replicated" in alarm for alarm in alarms), alarms
    assert any("RabbitMQ: 1 of 3 nodes not running" in alarm for alarm in alarms), alarms
    assert any("RabbitMQ quorum queue" in alarm and "2 of 3 members online" in alarm for alarm in alarms)


def test_fresh_nodes_bring_replication_back_to_full(cluster: ComposeProject) -> None:
    started = time.monotonic()
    # docs/multi-machine.md, "Replacing a lost broker node", in order.
    _ok(cluster.compose("exec", "-T", "rabbitmq-2", "rabbitmqctl", "forget_cluster_node", "rabbit@rabbitmq"))
    _ok(cluster.compose("--profile", "spare", "up", "-d", "--wait", "kafka-4", "rabbitmq-4", timeout_s=900))
    _ok(cluster.compose("exec", "-T", "rabbitmq-4", "rabbitmq-queues", "grow", "rabbit@rabbitmq-4", "all"))
    plan = _ok(cluster.compose("exec", "-T", "frontier", "dualplane", "cluster", "reassignment")).stdout
    assert json.loads(plan)["partitions"], "no partition had a replica on the lost broker"
    execute = (
        "cat > /tmp/plan.json && /opt/kafka/bin/kafka-reassign-partitions.sh --bootstrap-server "
        "localhost:9092 --reassignment-json-file /tmp/plan.json --execute"
    )
    _ok(_exec_with_input(cluster, "kafka-2", execute, plan))
    deadline, alarms = time.monotonic() + 300, ["not read yet"]
    while time.monotonic() < deadline:
        replication = _status(cluster)["replication"]
        alarms = replication["alarms"]
        if not alarms:
            break
        time.sleep(5)
    TIMINGS["heal_s"] = time.monotonic() - started
    assert alarms == [], alarms
    assert replication["kafka"]["brokers"] == 3 and replication["rabbitmq"]["nodes"] == 3


def test_a_service_started_with_one_copy_makes_topics_that_status_reports(cluster: ComposeProject) -> None:
    """One replication setting broken on purpose: a process started with
    DUALPLANE_KAFKA_REPLICATION_FACTOR=1 makes its topics, pages.raw among them, with one copy (in a
    namespace of its own, so the crawl's topics stay as they were), and ``status`` says so."""
    broken = ("-e", "DUALPLANE_KAFKA_REPLICATION_FACTOR=1", "-e", "DUALPLANE_KAFKA_MIN_INSYNC_REPLICAS=1")
    _ok(cluster.compose("exec", "-T", *broken, "frontier", "python", "-c", MAKE_TOPICS, timeout_s=300))
    alarms = _status(cluster)["replication"]["alarms"]
    print("status with topics of one copy:\n  " + "\n  ".join(alarms))
    pages_raw = f"dualplane-{ONE_COPY}.pages.raw"
    assert f"Kafka topic {pages_raw}: replication factor 1, below the 3 that 3 brokers allow" in alarms


def _up(stack: ComposeProject, attempts: int = 3) -> subprocess.CompletedProcess[str]:
    """``UP``, again while an app container was unhealthy: on a loaded machine a service's first
    start can give up on a broker that is still slow (it exits, and ``restart:`` starts it again)."""
    for _ in range(attempts - 1):
        up = stack.run(UP, timeout_s=1800)
        unhealthy = [line for line in up.stderr.splitlines() if line.endswith("is unhealthy")]
        if up.returncode == 0 or not unhealthy:
            return up
        service = unhealthy[0].split()[1].rsplit("-", 1)[0].removeprefix(f"{stack.name}-")
        print(f"\n{unhealthy[0]}; its last lines:\n{stack.compose('logs', '--tail', '15', service).stdout}")
    return stack.run(UP, timeout_s=1800)


def _status(cluster: ComposeProject, within_s: float = 240) -> dict[str, Any]:
    """``status --json``, asked again while a broker's part is missing: for up to RabbitMQ's
    net_ticktime (60 s) after a node vanishes, the survivors' management API can time out."""
    deadline = time.monotonic() + within_s
    while True:
        completed = cluster.compose("exec", "-T", "frontier", "dualplane", "status", "--json", timeout_s=180)
        if completed.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(10)
    assert completed.returncode == 0, completed.stderr[-2000:]
    return json.loads(completed.stdout)  # type: ignore[no-any-return]


def _wait_for_pages(site: str, crawl: subprocess.Popen[str]) -> int:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        assert crawl.poll() is None, f"the crawl ended before the loss: {crawl.communicate()}"
        served = sum(_pages_fetched(site).values())
        if served >= LOSE_AFTER_PAGES:
            return served
        time.sleep(0.5)
    raise AssertionError(f"the site served fewer than {LOSE_AFTER_PAGES} pages in 300 s")


def _wait_for_the_crawl(site: str, crawl: subprocess.Popen[str]) -> tuple[str, str]:
    """The crawl's output once it ends, or once the site has served no request for ``STALL_S``
    (the crawl is then ended, and fails): the CLI's own stall notice takes as long, and a crawl
    that waits that long waits for good, which would otherwise hold CI for ``CRAWL_WITHIN_S``."""
    requests, changed = -1, time.monotonic()
    deadline = changed + CRAWL_WITHIN_S
    while True:
        try:
            return crawl.communicate(timeout=5)  # nothing read is lost when it times out
        except subprocess.TimeoutExpired:
            pass
        now = time.monotonic()
        seen = len(httpx.get(f"{site}/_log", timeout=30).json()["entries"])
        if seen != requests:
            requests, changed = seen, now
        if now - changed > STALL_S or now > deadline:
            crawl.kill()
            stdout, stderr = crawl.communicate()
            return stdout, f"{stderr}\nno request to the site for {now - changed:.0f} s ({requests} in all)"


def _queues(cluster: ComposeProject) -> str:
    """Every queue of the cluster as a surviving node's management API has it, with the messages a
    quorum queue dead-lettered but has not yet handed on (``messages_dlx``: a retry tier's tasks
    on their way back to their lane)."""
    script = (
        "import base64, json, urllib.request\n"
        "request = urllib.request.Request('http://rabbitmq-2:15672/api/queues')\n"
        "request.add_header('Authorization', 'Basic ' + base64.b64encode(b'guest:guest').decode())\n"
        "for q in json.load(urllib.request.urlopen(request, timeout=120)):\n"
        "    print(q['name'], q.get('messages_ready'), q.get('messages_unacknowledged'),"
        " q.get('messages_dlx'), q.get('leader'), sep='\\t')\n"
    )
    listed = cluster.compose("exec", "-T", "frontier", "python", "-c", script, timeout_s=180)
    return "name\tready\tunacked\tdead-lettered, not handed on\tleader\n" + (listed.stdout or listed.stderr)


def _relayed(cluster: ComposeProject) -> str:
    """Each fetcher's ``dualplane_retry_relayed_messages_total`` lines (what its retry relay handed
    back from the delay tiers), as its metrics endpoint gives them: a figure for the log, not a check."""
    script = (
        "import urllib.request\n"
        "text = urllib.request.urlopen('http://127.0.0.1:9464/metrics', timeout=60).read().decode()\n"
        "name = 'dualplane_retry_relayed_messages_total'\n"
        "print(' '.join(line for line in text.splitlines() if line.startswith(name)))\n"
    )
    lines = []
    for index in (1, 2):
        read = cluster.compose("exec", "-T", "--index", str(index), "fetcher", "python", "-c", script)
        lines.append(f"fetcher {index}: {read.stdout.strip() or read.stderr.strip()[-200:] or 'none'}")
    return "; ".join(lines)


def _lose_for_good(cluster: ComposeProject, services: tuple[str, ...]) -> None:
    """Stop and remove the services' containers, then their named volumes: nothing of them is left."""
    _ok(cluster.compose("rm", "--stop", "--force", "--volumes", *services))
    volumes = [f"{cluster.name}_{service}-data" for service in services]
    _ok(subprocess.run(["docker", "volume", "rm", *volumes], capture_output=True, text=True, check=False))


def _pages_fetched(site: str) -> Counter[str]:
    """GETs of pages per URL, as the site logged them (robots.txt and the site's own routes left out)."""
    entries = httpx.get(f"{site}/_log", timeout=30).json()["entries"]
    return Counter(
        f"http://sample-site:{SITE_PORT + entry['host']}{entry['path']}"
        for entry in entries
        if entry["method"] == "GET" and entry["path"] != "/robots.txt" and not entry["path"].startswith("/_")
    )


def _recorded_urls(cluster: ComposeProject) -> list[str]:
    exported = cluster.compose("exec", "-T", "frontier", "dualplane", "records", "export", "--job", JOB)
    assert exported.returncode == 0, exported.stderr
    return [json.loads(line)["url"] for line in exported.stdout.splitlines() if line.strip()]


def _exec_with_input(cluster: ComposeProject, service: str, script: str, text: str) -> Any:
    return subprocess.run(
        ["docker", "compose", "exec", "-T", service, "sh", "-c", script],
        input=text, env=cluster.env(), capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def _ok(completed: Any) -> Any:
    assert completed.returncode == 0, f"{completed.args}: {completed.stderr[-2000:]}"
    return completed
