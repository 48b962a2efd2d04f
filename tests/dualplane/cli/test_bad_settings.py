"""A bad setting is refused at start: one line naming it, a nonzero exit, no traceback (#27 P7).

Each case is a probe's finding, run through the real CLI in a subprocess. Before: three
tracebacks (botocore's "Invalid endpoint", pydantic-settings' SettingsError), a ``status`` that
retried a broker list of ``:::::`` for 43 s and exited 0, and values taken silently.
"""

from __future__ import annotations

import time

import pytest

from tests.support.cli import CliResult, free_ports, run_cli

pytestmark = pytest.mark.e2e


def _the_error_line(result: CliResult) -> str:
    output = result.stdout + result.stderr
    assert "Traceback" not in output, output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: ")
    return lines[0]


@pytest.mark.parametrize(
    ("variable", "value", "command"),
    [
        ("DUALPLANE_S3_ENDPOINT_URL", "not-a-url", ["crawl", "--seeds-file", "s3://seeds/list.txt"]),
        ("DUALPLANE_S3_ENDPOINT_URL", "not-a-url", ["run", "s3-sink"]),
        ("DUALPLANE_EXTRACT_EXTRACTOR_BY_DOMAIN", "{bad json", ["run", "extractor"]),
        ("DUALPLANE_EXTRACT_EXTRACTOR_BY_DOMAIN", '["reviews"]', ["run", "extractor"]),
        ("DUALPLANE_KAFKA_BOOTSTRAP_SERVERS", ":::::", ["status"]),
        ("DUALPLANE_KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:99999", ["status"]),
        ("DUALPLANE_FETCH_ALLOW_HOSTS", "not a cidr/99", ["run", "fetcher"]),
        ("DUALPLANE_FETCH_PROXIES", "::bad", ["run", "fetcher"]),
        # #34: each was taken, and failed later (test_bad_values sweeps every setting in-process)
        ("DUALPLANE_FETCH_USER_AGENT", "bot/1.0\r\nX-Injected: 1", ["run", "fetcher"]),
        ("DUALPLANE_FETCH_USER_AGENT", "", ["run", "fetcher"]),
        ("DUALPLANE_FETCH_TOTAL_TIMEOUT_S", "inf", ["run", "fetcher"]),
        ("DUALPLANE_EXTRACT_SCHEMA_VERSION", "99", ["run", "extractor"]),
        ("DUALPLANE_EXTRACT_EXTRACTOR_BY_DOMAIN", '{"shop.example": "no-such-plugin"}', ["run", "extractor"]),
        ("DUALPLANE_AMQP_MANAGEMENT_URL", "notaurl", ["status"]),
    ],
)
def test_a_bad_setting_is_one_line_naming_it_and_no_traceback(
    variable: str, value: str, command: list[str]
) -> None:
    started = time.monotonic()
    result = run_cli(*command, env={variable: value}, timeout_s=60)

    assert result.exit_code == 2, (result.exit_code, result.stderr)
    assert f"invalid configuration: {variable}: " in _the_error_line(result)
    assert time.monotonic() - started < 20, "refused at start, before any broker was tried"


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["dlq", "list", "--limit", "-1"], "'--limit'"),  # showed "0 dead letter(s)" while 3 existed
        (["records", "latest", "--url", ""], "'--url'"),
        (
            ["monitor", "create", "--seed", "http://a.example/", "--interval", "99999999999999999999d"],
            "--interval",
        ),
        (["replay", "--schema-version", "99"], "--schema-version"),
    ],
    ids=" ".join,
)
def test_a_bad_option_is_one_line_naming_it_and_no_traceback(argv: list[str], option: str) -> None:
    result = run_cli(*argv, timeout_s=60)

    assert result.exit_code == 2, (result.exit_code, result.stderr)
    assert f"Invalid value for {option}" in _the_error_line(result)
    assert "success" not in result.stdout and "monitor " not in result.stdout


def test_good_values_of_the_checked_settings_are_taken() -> None:
    good = {
        "DUALPLANE_S3_ENDPOINT_URL": "",  # AWS
        "DUALPLANE_KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9092,[::1]:9092,kafka-2.internal:9093",
        "DUALPLANE_FETCH_ALLOW_HOSTS": "127.0.0.1,10.0.0.0/8,fd00::/8,localhost,sample_site.test",
        "DUALPLANE_FETCH_PROXIES": "http://user:secret@proxy-1.example:3128,https://proxy-2.example",
        "DUALPLANE_EXTRACT_EXTRACTOR_BY_DOMAIN": '{"books.example.com": "reviews"}',
    }
    result = run_cli("config", "show", "--json", env=good, timeout_s=60)

    assert result.exit_code == 0, result.stderr
    shown = result.json()
    assert shown["extract"]["extractor_by_domain"] == {"books.example.com": "reviews"}
    assert shown["fetch"]["allow_hosts"] == good["DUALPLANE_FETCH_ALLOW_HOSTS"]


def test_status_that_reaches_no_kafka_exits_1_with_one_line() -> None:
    (port,) = free_ports(1)
    result = run_cli("status", env={"DUALPLANE_KAFKA_BOOTSTRAP_SERVERS": f"127.0.0.1:{port}"}, timeout_s=150)

    assert result.exit_code == 1, result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1 and "status is incomplete, a broker did not answer" in errors[0], lines
    # librdkafka's own complaints: through our logging, folded (477 raw lines before), never raw.
    assert not any(line.startswith("%") for line in lines), lines
    assert len(lines) <= 6, lines


def test_an_extractor_no_plugin_provides_is_warned_about_before_submitting() -> None:
    (amqp_port,) = free_ports(1)
    down = {"DUALPLANE_AMQP_URL": f"amqp://guest:guest@127.0.0.1:{amqp_port}/%2F"}
    result = run_cli("crawl", "--seed", "http://a.example/", "--extractor", "no-such-plugin", env=down)

    warning = next(line for line in result.stderr.splitlines() if line.startswith("warning: "))
    assert "--extractor 'no-such-plugin' is no extractor plugin installed here" in warning
    assert "Traceback" not in result.stderr
