"""Entry point of the ``dualplane`` command: lists the sub-commands and turns errors into exit codes.

Exit codes: 0 success, 1 failure, 2 usage or configuration error; each error is one readable line on
stderr (click's usage errors too, instead of rich's framed box of five lines and more).

A command's module is imported only when that command is used (:mod:`dualplane.cli.lazy`), so
``dualplane --help`` and ``dualplane status --help`` start without loading Kafka, AMQP, extraction
or plotting libraries; ``tests/dualplane/cli/test_lazy_cli.py`` holds that.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from dualplane.cli.lazy import LazyCommand, LazyGroup
from dualplane.cli.output import stderr
from dualplane.core.exceptions import ConfigurationError, DualplaneError

if TYPE_CHECKING:
    from pydantic import ValidationError

ENV_PREFIX = "DUALPLANE_"  # core.settings.ENV_PREFIX, not imported for --help (pydantic-settings is slow)


def _cmd(module: str, attribute: str, help: str, **context_settings: bool) -> LazyCommand:
    return LazyCommand(f"dualplane.cli.{module}", attribute, help, context_settings)


# In the order `dualplane --help` lists them; each help line is its command's first paragraph.
COMMANDS = {
    "demo": _cmd(
        "demo_cmd", "demo",
        "Start the embedded stack, prove every plane answers, crawl a sample site whose first host fights\n"
        "back (the throttle halves it and recovers), replay the crawl into v2 records, write its report.",
    ),
    "crawl": _cmd(
        "crawl_cmd", "crawl", "Submit a crawl job: its rules, then its seeds, each confirmed by RabbitMQ.",
    ),
    "namespace": _cmd(
        "namespace_cmd", "app", "Namespaces: private sets of topics and queues on shared brokers."
    ),
    "job": _cmd(
        "job_cmd", "app", "Crawl jobs: pause, resume, or cancel one (its queued pages dropped unfetched)."
    ),
    "status": _cmd(
        "status_cmd", "status",
        "Jobs (done, failed, dead-lettered, queued, rate, ETA), queues, consumer lag, throttled domains.",
    ),
    "run": _cmd(
        "run_cmd", "run",
        "Run services until Ctrl-C or SIGTERM (then they stop cleanly); with --processes N, in N child\n"
        "processes (frontier shards are divided among them), each restarted never: one that dies stops all.",
    ),
    "sample-site": _cmd(
        "sample_site_cmd", "sample_site",
        "Serve a deterministic multi-host website on 127.0.0.1 for demos, tests and benchmarks.",
    ),
    "replay": _cmd(
        "replay_cmd", "replay_command",
        "Re-run extraction over pages.raw (by time or offsets; the end is fixed when it starts).",
    ),
    "report": _cmd(
        "report_cmd", "report",
        "Throughput, outcomes, throttle timelines, slowest and failing domains, dead letters: one HTML file.",
    ),
    "reshard": _cmd(
        "reshard_cmd", "reshard_command",
        "Move the frontier's state and queued discovery from DUALPLANE_QUEUE_FRONTIER_SHARDS shards to\n"
        "--to shards. Stop every frontier, fetcher and extractor first; afterwards start them all with\n"
        "DUALPLANE_QUEUE_FRONTIER_SHARDS set to the new count.",
    ),
    "extract": _cmd(
        "extract_cmd", "extract",
        "Extract page records from saved HTML files, exactly as the extractor service would.",
    ),
    "kafka": _cmd(
        "kafka_cmd", "kafka", "Run a Kafka command-line tool, e.g. `dualplane kafka topics --list`.",
        allow_extra_args=True, ignore_unknown_options=True,
    ),
    "cluster": _cmd(
        "cluster_cmd", "app",
        "Bring replication back after a broker is lost for good (docs/multi-machine.md).",
    ),
    "config": _cmd(
        "config_cmd", "app", "Inspect the effective settings (DUALPLANE_* environment variables).",
    ),
    "stack": _cmd("stack_cmd", "app", "Run Kafka (KRaft), RabbitMQ and an S3 endpoint on loopback."),
    "dlq": _cmd("dlq_cmd", "app", "Dead letters: messages that could not be handled, with the reason."),
    "records": _cmd(
        "records_cmd", "app", "Read extracted page records (the records topic, committed records only)."
    ),
    "changes": _cmd("changes_cmd", "app", "Change events: what changed on a page since its previous record."),
    "monitor": _cmd(
        "monitor_cmd", "app", "Monitors: crawl jobs that come back, revisiting each page when it is due."
    ),
    "throttle": _cmd(
        "throttle_cmd", "app",
        "Adaptive throttling: what the block-ratio processor decided per domain, and why.",
    ),
    "profile": _cmd(
        "profile_cmd", "app",
        "Fetch profiles: per domain pattern, the backend (direct or our own browser), render waits, headers.",
    ),
}  # fmt: skip


def warn_unknown_settings() -> None:
    """Name the ``DUALPLANE_*`` variables no setting reads (misspelt?), once a command runs."""
    if not any(name.startswith(ENV_PREFIX) for name in os.environ):
        return
    from dualplane.core import settings as settings_module

    for name in settings_module.unknown_env_names(os.environ):
        warning = f"{name} is not a dualplane setting and is ignored (misspelt?)"
        stderr.print(f"[yellow]warning:[/yellow] {warning}", soft_wrap=True, highlight=False)


app = LazyGroup(
    name="dualplane",
    help="Distributed crawling and extraction: RabbitMQ control plane, Kafka data plane.",
    no_args_is_help=True,
    lazy=COMMANDS,
    before_run=warn_unknown_settings,
)


def main() -> None:
    from typer import Abort
    from typer import _click as click

    try:
        code = app.main(prog_name=None, standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as error:
        error.show()  # the help text the user asked for by giving nothing
        sys.exit(error.exit_code)
    except click.exceptions.UsageError as error:
        where = f" (`{error.ctx.command_path} --help` says what it takes)" if error.ctx else ""
        _fail(f"{error.format_message()}{where}", error.exit_code)
    except click.exceptions.ClickException as error:
        _fail(error.format_message(), error.exit_code)
    except Abort:
        _fail("aborted", 1)
    except ConfigurationError as error:
        _fail(f"invalid configuration: {error}", 2)
    except DualplaneError as error:
        _fail(str(error), 1)
    except Exception as error:
        from pydantic import ValidationError

        if isinstance(error, ValidationError):  # a DUALPLANE_* variable with a bad value: say which
            _fail(configuration_problem(error), 2)
        from dualplane.cli.errors import describe

        line = describe(error)
        if line is None:
            raise  # a bug: its traceback is what helps
        _fail(line, 1)
    sys.exit(code if isinstance(code, int) else 0)


def _fail(line: str, code: int) -> None:
    from rich.markup import escape

    # Escaped: an error names inputs and commands (`pip install 'dualplane[local]'`), never markup.
    stderr.print(f"[red]error:[/red] {escape(line)}", soft_wrap=True, highlight=False)
    sys.exit(code)


def configuration_problem(error: ValidationError) -> str:
    """A settings section's validation error in terms of the environment variables a user sets."""
    from pydantic_settings import BaseSettings

    from dualplane.core import settings as settings_module

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
