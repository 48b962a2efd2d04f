"""The CLI starts fast: ``--help`` imports no command's machinery, and still lists every command.

#23.6: ``dualplane --help`` took 2.2-2.7 s, importing Kafka and AMQP clients, the extraction library,
matplotlib and boto3 for a list of names. What a help screen imports is checked here (not timed:
a check that fails on the old code whatever the machine's load).
"""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys

import pytest

from dualplane import services
from dualplane.cli import main, run_cmd
from dualplane.core import settings as core_settings

pytestmark = pytest.mark.unit

HEAVY = ("confluent_kafka", "pika", "faust", "trafilatura", "lxml", "boto3", "matplotlib", "aiohttp", "numpy",
         "httpx", "pydantic_settings", "fastavro")  # fmt: skip
# Runs the CLI in a fresh interpreter and prints which heavy modules it imported on the way.
PROBE = """
import json, sys
from dualplane.cli.main import app
try:
    app.main(sys.argv[1:], prog_name="dualplane")
except SystemExit:
    pass
print(json.dumps(sorted(m for m in {heavy!r} if m in sys.modules)), file=sys.stderr)
"""


def imported_by(*args: str) -> list[str]:
    probe = PROBE.format(heavy=HEAVY)
    done = subprocess.run(
        [sys.executable, "-c", probe, *args], capture_output=True, text=True, timeout=60, check=True
    )
    return list(json.loads(done.stderr.strip().splitlines()[-1]))


@pytest.mark.parametrize(
    "args", [["--help"], [], ["status", "--help"], ["crawl", "--help"], ["run", "--help"]], ids=" ".join
)
def test_help_imports_no_heavy_module(args: list[str]) -> None:
    assert imported_by(*args) == []


def test_the_probe_sees_a_command_that_does_import_them() -> None:
    """The probe can fail: loading the extract command imports the extraction library."""
    assert "lxml" in imported_by("extract", "--help")


def test_the_root_help_lists_each_command_with_its_own_first_paragraph() -> None:
    for name, entry in main.COMMANDS.items():
        command = entry.load(name)
        own = inspect.cleandoc(command.help or "").split("\n\n")[0].strip()
        assert entry.help == own, f"`dualplane --help` line of {name!r} differs from the command's own help"


def test_every_command_is_listed_and_runs_through_the_group() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "dualplane", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "200"},
        check=False,
    )
    assert result.returncode == 0, result.stderr
    listed = [
        line.split()[1] for line in result.stdout.splitlines() if line.startswith("│ ") and line[2] != " "
    ]
    assert listed[1:] == list(main.COMMANDS)  # the first row is --help


def test_names_copied_to_keep_imports_light_match_their_source() -> None:
    assert run_cmd.SERVICE_NAMES == services.SERVICE_NAMES
    assert main.ENV_PREFIX == core_settings.ENV_PREFIX
