"""``dualplane throttle set | clear | show`` end to end: the real command against the real brokers."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from dualplane.core.settings import Settings
from dualplane.data_plane.throttle import overrides
from dualplane.data_plane.throttle.commands import ThrottleCommand
from dualplane.data_plane.throttle.view import ThrottleView, read_latest_commands
from dualplane.namespaces import drop_namespace, named_namespace
from tests.support.cli import CliResult, run_cli
from tests.support.factories import ControlPlaneFactory

pytestmark = [pytest.mark.integration, pytest.mark.e2e, pytest.mark.slow]


def wait_until(check: object, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "not reached in time"
        time.sleep(0.02)


def test_throttle_set_show_and_clear(control_plane: ControlPlaneFactory, tmp_path: Path) -> None:
    settings: Settings = control_plane.settings()
    # No processor runs for this namespace: show must work from the overrides alone.
    env = {**settings.to_env(), "DUALPLANE_THROTTLE_SNAPSHOT_PATH": str(tmp_path / "none.json")}

    def cli(*args: str) -> CliResult:
        return run_cli("throttle", *args, env=env, timeout_s=60)

    defaults = (settings.limits.domain_concurrency, settings.limits.domain_delay_ms, False)
    with ThrottleView(settings) as view:
        result = cli("set", "Shop.Test", "--concurrency", "1", "--delay", "7000ms", "--ttl", "600s", "--json")
        assert result.exit_code == 0, result.stderr
        issued = result.json()
        assert issued["domain"] == "shop.test" and issued["state_key"] == "shop.test@operator"
        assert (issued["concurrency"], issued["delay_ms"], issued["ttl_s"]) == (1, 7000, 600)

        wait_until(lambda: view.limits("shop.test") == (1, 7000, False))  # a running process has it
        assert view.details("shop.test").source == "operator"
        keys = read_latest_commands(settings.kafka, settings.topics.throttle_state)
        assert "shop.test@operator" in keys  # and processes started later will read it

        shown = cli("show", "--json")
        assert shown.exit_code == 0, shown.stderr
        assert shown.json()["snapshot"] is None
        assert [(o["domain"], o["concurrency"], o["delay_ms"]) for o in shown.json()["overrides"]] == [
            ("shop.test", 1, 7000)
        ]
        table = cli("show")
        assert "shop.test" in table.stdout and "7000 ms" in table.stdout, table.stdout

        # The old flag names still work for one release, and say what replaced them.
        old = cli("set", "shop.test", "--concurrency", "1", "--delay-ms", "6000", "--ttl-s", "600", "--json")
        assert old.exit_code == 0, old.stderr
        assert (old.json()["delay_ms"], old.json()["ttl_s"]) == (6000, 600)
        assert "--delay-ms is deprecated" in old.stderr and "--ttl-s is deprecated" in old.stderr
        wait_until(lambda: view.limits("shop.test") == (1, 6000, False))

        cleared = cli("clear", "shop.test")
        assert cleared.exit_code == 0, cleared.stderr
        wait_until(lambda: view.limits("shop.test") == defaults)

    nothing = cli("show")
    assert nothing.exit_code == 1
    assert "dualplane run throttle" in nothing.stderr


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (
            ["set", "https://shop.test/x", "--concurrency", "1", "--delay", "10ms"],
            1,
            "did you mean 'shop.test'",
        ),
        (["set", "shop.test", "--concurrency", "0", "--delay", "10ms"], 2, "--concurrency"),
    ],
)
def test_throttle_set_explains_bad_input(args: list[str], code: int, message: str) -> None:
    result = run_cli("throttle", *args, timeout_s=60)
    assert result.exit_code == code
    assert message in " ".join(result.stderr.split()), result.stderr


def test_show_reads_the_processors_decisions_from_the_brokers_in_a_namespace(
    control_plane: ControlPlaneFactory, tmp_path: Path
) -> None:
    """No snapshot file on this machine: the rate, limit, decision and why come from the compacted
    topic of the namespace asked for."""
    settings: Settings = control_plane.settings()
    name = f"show-{uuid.uuid4().hex[:8]}"
    spaced = named_namespace(settings, name)
    reason = (
        "backoff: blocked 40.0% of 20 fetches (threshold 5.0%), sent 5.26/s, passed 3.16/s: "
        "4.05 requests/s, concurrency 8 -> 1, delay 0 -> 180 ms"
    )
    command = ThrottleCommand(
        domain="slow.test", concurrency=1, delay_ms=180, reason=reason, blocked_ratio=0.4,
        window_total=20, window_blocked=8, rate_rps=4.05, limit_rps=5.2,
    )  # fmt: skip
    env = {**settings.to_env(), "DUALPLANE_THROTTLE_SNAPSHOT_PATH": str(tmp_path / "none.json")}
    try:
        overrides.issue(spaced, command)  # as the processor writes it: source auto, key the domain
        shown = run_cli("throttle", "show", "--namespace", name, "--json", env=env, timeout_s=60)
        assert shown.exit_code == 0, shown.stderr
        (entry,) = shown.json()["domains"]
        assert (entry["domain"], entry["rate_rps"], entry["limit_rps"]) == ("slow.test", 4.05, 5.2)
        assert (entry["decision"], entry["concurrency"], entry["delay_ms"]) == ("backoff", 1, 180)
        assert entry["why"].startswith("blocked 40.0% of 20 fetches"), entry
        table = run_cli("throttle", "show", "--namespace", name, env=env, timeout_s=60)
        assert table.exit_code == 0, table.stderr
        assert all(text in table.stdout for text in ("slow.test", "4.05/s", "5.20/s", "backoff")), (
            table.stdout
        )
    finally:
        drop_namespace(spaced)
