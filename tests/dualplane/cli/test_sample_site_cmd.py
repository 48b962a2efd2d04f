"""``sample-site`` as a user runs it: JSON once ready, serving until Ctrl-C, exit code 0."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import httpx
import pytest

from tests.support.cli import interruptible

pytestmark = pytest.mark.unit

# The command function on its own, so this test does not depend on how main.py registers it.
RUN_COMMAND = "import typer; from dualplane.cli.sample_site_cmd import sample_site; typer.run(sample_site)"


def test_json_announces_the_seeds_then_serves_until_interrupted() -> None:
    command = [
        sys.executable,
        "-c",
        RUN_COMMAND,
        "--json",
        "--hosts",
        "2",
        "--pages",
        "5",
        "--latency",
        "0ms",
    ]
    process = subprocess.Popen(
        interruptible(command),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    try:
        assert process.stdout is not None
        text = ""
        for line in process.stdout:  # print_json writes an indented object; it ends with a lone "}"
            text += line
            if line == "}\n":
                break
        announced = json.loads(text)
        assert len(announced["seeds"]) == 2 and [h["kind"] for h in announced["hosts"]] == ["shop", "news"]
        assert httpx.get(announced["seeds"][1], timeout=5).status_code == 200
    finally:
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)  # generous: a loaded CI machine is slow, not the site

    assert process.returncode == 0, stderr
    assert "stopped; 1 requests served" in stderr


def test_a_zero_anti_bot_rate_is_a_usage_error() -> None:
    command = [sys.executable, "-c", RUN_COMMAND, "--anti-bot-rps", "0"]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)

    assert completed.returncode == 2 and "--anti-bot-rps" in completed.stderr


def test_listening_on_every_address_needs_a_public_name() -> None:
    command = [sys.executable, "-c", RUN_COMMAND, "--bind", "0.0.0.0"]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)

    assert completed.returncode == 2 and "--public-host" in completed.stderr
