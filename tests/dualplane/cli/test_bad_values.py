"""Every setting and option that takes a value refuses a malformed one at start (#34 part 4).

Found by walking every ``Settings`` field and every CLI option that takes a value: each case was
taken before (and failed late, deep or never), and is now one line naming the variable or option,
saying what to give instead, with exit code 2 and no traceback. Run in-process through
``cli.main.main`` (the entry point), so the whole sweep costs well under a second;
``test_bad_settings`` runs the issue's own examples through a real subprocess.
"""

from __future__ import annotations

import sys

import pytest

from dualplane.cli import main as cli_main

pytestmark = pytest.mark.unit

HUGE = "99999999999999999999"
SETTINGS = [
    ("DUALPLANE_FETCH_USER_AGENT", "bot/1.0\r\nX-Injected: 1", "line break"),
    ("DUALPLANE_FETCH_USER_AGENT", "", "is empty"),
    ("DUALPLANE_FETCH_USER_AGENT", "   ", "is empty"),
    ("DUALPLANE_FETCH_TOTAL_TIMEOUT_S", "inf", "finite number"),
    ("DUALPLANE_FETCH_READ_TIMEOUT_S", "nan", "finite number"),
    ("DUALPLANE_FETCH_CONNECT_TIMEOUT_S", "1e300", "too long a duration"),
    ("DUALPLANE_FRONTIER_ROBOTS_TTL_S", HUGE, "too long a duration"),
    ("DUALPLANE_THROTTLE_RECOVERY_S", "inf", "finite number"),
    ("DUALPLANE_SINK_IDLE_FLUSH_S", "1e12", "too long a duration"),
    ("DUALPLANE_TOPIC_PAGES_RAW_RETENTION_MS", HUGE, "too long a duration"),
    ("DUALPLANE_QUEUE_HANDLER_MAX_FAILURES", "0", "greater than or equal to 1"),
    ("DUALPLANE_AMQP_MANAGEMENT_URL", "notaurl", "no http(s) URL"),
    ("DUALPLANE_SCHEMA_REGISTRY_URL", "notaurl", "no http(s) URL"),
    ("DUALPLANE_TOPIC_RECORDS", "", "no Kafka topic name"),
    ("DUALPLANE_TOPIC_PAGES_RAW", "pages raw", "no Kafka topic name"),
    ("DUALPLANE_QUEUE_CRAWL_TASKS", "", "is no name"),
    ("DUALPLANE_KAFKA_GROUP_PREFIX", " ", "is no name"),
    ("DUALPLANE_KAFKA_CLIENT_ID", "a\nb", "is no name"),
    ("DUALPLANE_S3_BUCKET", "Not_A_Bucket", "no S3 bucket name"),
    ("DUALPLANE_SINK_BUCKET", "x", "no S3 bucket name"),
    ("DUALPLANE_METRICS_BIND", "not an address", "no address or host name"),
    ("DUALPLANE_THROTTLE_WEB_BIND", "-bad-", "no address or host name"),
    ("DUALPLANE_STACK_KAFKA_CONTROLLER_PORT", "70000", "less than or equal to 65535"),
]
OPTIONS = [
    (["dlq", "list", "--limit", "-1"], "'--limit'"),
    (["dlq", "list", "--limit", "0"], "'--limit'"),
    (["dlq", "redrive", "--job", ""], "'--job'"),
    (["records", "latest", "--url", ""], "'--url'"),
    (["records", "export", "--job", ""], "'--job'"),
    (["status", "--job", ""], "'--job'"),
    (["status", "--interval", "inf"], "'--interval'"),
    (["monitor", "create", "--seed", "http://a.example/", "--interval", f"{HUGE}d"], "--interval"),
    (["monitor", "create", "--seed", "http://a.example/", "--max-interval", "99999d"], "--max-interval"),
    (["monitor", "create", "--seed", ""], "'--seed'"),
    (["crawl", "--seed", "http://a.example/", "--timeout", "inf", "--wait"], "'--timeout'"),
    (["crawl", "--seed", "http://a.example/", "--timeout", "nan", "--wait"], "'--timeout'"),
    (["crawl", "--seed", "http://a.example/", "--timeout-s", "inf", "--wait"], "'--timeout-s'"),
    (["crawl", "--seed", ""], "'--seed'"),
    (["crawl", "--seed", "http://a.example/", "--allow-domain", ""], "'--allow-domain'"),
    (["crawl", "--seed", "http://a.example/", "--extractor", ""], "'--extractor'"),
    (["run", "frontier", "--log-level", "loud"], "'--log-level'"),
    (["replay", "--schema-version", "99"], "--schema-version"),
    (["replay", "--schema-version", "3", "--processes", "0"], "'--processes'"),
    (["replay", "--schema-version", "3", "--to-topic", ""], "'--to-topic'"),
    (["throttle", "set", "a.example", "--concurrency", "1", "--delay", HUGE], "'--delay'"),
    (["demo", "--hosts", "0"], "'--hosts'"),
]


def _run(argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> str:
    monkeypatch.setattr(sys, "argv", ["dualplane", *argv])
    with pytest.raises(SystemExit) as exited:
        cli_main.main()
    captured = capsys.readouterr()
    assert exited.value.code == 2, captured.err
    assert "Traceback" not in captured.out + captured.err
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0]


@pytest.mark.parametrize(("variable", "value", "expected"), SETTINGS, ids=lambda x: repr(x)[:40])
def test_a_malformed_setting_is_one_line_naming_it(
    variable: str,
    value: str,
    expected: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(variable, value)
    line = _run(["config", "show"], monkeypatch, capsys)
    assert f"invalid configuration: {variable}: " in line and expected in line, line


@pytest.mark.parametrize(("argv", "option"), OPTIONS, ids=" ".join)
def test_a_malformed_option_is_one_line_naming_it(
    argv: list[str], option: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _run(argv, monkeypatch, capsys)
    assert f"Invalid value for {option}" in line, line


def test_good_values_are_taken(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    good = {
        "DUALPLANE_FETCH_USER_AGENT": "dualplane/0.1 (+https://example.com/bot)",
        "DUALPLANE_TOPIC_PAGES_RAW_RETENTION_MS": "-1",  # Kafka's "keep for ever"
        "DUALPLANE_FETCH_TOTAL_TIMEOUT_S": "90.5",
        "DUALPLANE_SCHEMA_REGISTRY_URL": "http://127.0.0.1:8081,http://registry-2.internal:8081",
        "DUALPLANE_METRICS_BIND": "0.0.0.0",
        "DUALPLANE_SINK_BUCKET": "",  # DUALPLANE_S3_BUCKET's
        "DUALPLANE_S3_BUCKET": "crawl-archive.v2",
    }
    for variable, value in good.items():
        monkeypatch.setenv(variable, value)
    monkeypatch.setattr(sys, "argv", ["dualplane", "config", "show", "--json"])
    with pytest.raises(SystemExit) as exited:
        cli_main.main()
    assert exited.value.code == 0, capsys.readouterr().err


@pytest.mark.parametrize("user_agent", ["bot/1.0\r\nX-Injected: 1", " "], ids=["crlf", "blank"])
def test_a_profile_user_agent_follows_the_user_agent_setting_rule(
    user_agent: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["profile", "set", "shops", "--domain", "shop.example", "--user-agent", user_agent]
    line = _run(argv, monkeypatch, capsys)
    assert "profile shops: the user agent" in line, line
