"""Entry point of the ``dualplane`` command: wires the sub-commands and turns errors into exit codes.

Exit codes: 0 success, 1 failure (one readable line on stderr), 2 usage error (from click).
"""

from __future__ import annotations

import os
import sys

import typer
from pydantic import ValidationError
from pydantic_settings import BaseSettings

from core import settings as settings_module
from core.exceptions import DualplaneError
from dualplane.cli import (
    config_cmd,
    crawl_cmd,
    demo_cmd,
    dlq_cmd,
    extract_cmd,
    kafka_cmd,
    records_cmd,
    replay_cmd,
    report_cmd,
    reshard_cmd,
    run_cmd,
    sample_site_cmd,
    stack_cmd,
    status_cmd,
    throttle_cmd,
)
from dualplane.cli.errors import describe
from dualplane.cli.output import stderr

app = typer.Typer(
    name="dualplane",
    help="Distributed crawling and extraction: RabbitMQ control plane, Kafka data plane.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(config_cmd.app, name="config")
app.add_typer(stack_cmd.app, name="stack")
app.add_typer(dlq_cmd.app, name="dlq")
app.add_typer(records_cmd.app, name="records")
app.add_typer(throttle_cmd.app, name="throttle")
app.command("demo")(demo_cmd.demo)
app.command("crawl")(crawl_cmd.crawl)
app.command("status")(status_cmd.status)
app.command("run")(run_cmd.run)
app.command("sample-site")(sample_site_cmd.sample_site)
app.command("replay")(replay_cmd.replay_command)
app.command("report")(report_cmd.report)
app.command("reshard")(reshard_cmd.reshard_command)
app.command("extract")(extract_cmd.extract)
app.command("kafka", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(
    kafka_cmd.kafka
)


def main() -> None:
    for name in settings_module.unknown_env_names(os.environ):
        warning = f"{name} is not a dualplane setting and is ignored (misspelt?)"
        stderr.print(f"[yellow]warning:[/yellow] {warning}", soft_wrap=True, highlight=False)
    try:
        app()
    except DualplaneError as error:
        _fail(str(error), 1)
    except ValidationError as error:  # a DUALPLANE_* variable with a bad value: say which, no traceback
        _fail(configuration_problem(error), 2)
    except Exception as error:
        line = describe(error)
        if line is None:
            raise  # a bug: its traceback is what helps
        _fail(line, 1)


def _fail(line: str, code: int) -> None:
    stderr.print(f"[red]error:[/red] {line}", soft_wrap=True, highlight=False)
    sys.exit(code)


def configuration_problem(error: ValidationError) -> str:
    """A settings section's validation error in terms of the environment variables a user sets."""
    section = getattr(settings_module, error.title, None)
    is_section = isinstance(section, type) and issubclass(section, BaseSettings)
    prefix = str(section.model_config.get("env_prefix", "")) if is_section else ""  # type: ignore[union-attr]
    problems = []
    for problem in error.errors():
        field = "_".join(str(part) for part in problem["loc"]).upper()
        where = f"{prefix}{field}: " if field else ""
        problems.append(f"{where}{problem['msg']}")
    text = "; ".join(problems)
    hint = "" if "config show" in text else " (`dualplane config show` lists every setting)"
    return f"invalid configuration: {text}{hint}"
