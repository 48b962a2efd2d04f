"""Every ``dualplane`` command shown in the README and in ``docs/`` parses: the command and its
sub-command exist, every option it passes is one the command has, and every value has the option's
type. Commands are parsed by the CLI's own click objects, never run: a docs page shows commands
against a stack or a site that a unit test does not have. (What the commands print is checked by
the tests of each command; the compose section's commands are run by tests/docker.)

A renamed option or command breaks this test, so docs cannot drift from the CLI unnoticed.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import typer
from typer import _click as click
from typer.core import TyperGroup

from dualplane.cli.main import app

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\s*$")
SHELL_BLOCKS = {"", "sh", "bash", "console", "shell"}
ENV = re.compile(r"^[A-Z_][A-Z0-9_]*=\S*$")
PLACEHOLDER = re.compile(r"<[^>]+>|…|\.\.\.")
STOP = {"|", "||", "&&", ";", "&", ">", ">>", "2>", "2>&1", "<"}


def commands_in(page: Path) -> list[tuple[int, list[str]]]:
    """``(line number, argv after "dualplane")`` for each command line in the page's shell blocks."""
    found: list[tuple[int, list[str]]] = []
    kind: str | None = None
    pending, start = "", 0
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        fence = FENCE.match(line)
        if fence:
            kind = None if kind is not None else fence.group(1)
            continue
        if kind not in SHELL_BLOCKS:
            continue
        if not pending:
            start = number
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        argv = _dualplane_argv(pending + line)
        pending = ""
        if argv is not None:
            found.append((start, argv))
    return found


def _dualplane_argv(line: str) -> list[str] | None:
    text = line.strip().removeprefix("$ ")
    try:
        words = shlex.split(PLACEHOLDER.sub("x", text), comments=True)
    except ValueError:
        return None
    while words and ENV.match(words[0]):
        words.pop(0)
    if not words or words[0].endswith("/") or Path(words[0]).name != "dualplane":
        return None
    argv: list[str] = []
    for word in words[1:]:
        if word in STOP or word.startswith((">", "2>")):
            break
        if word.endswith(";"):  # `dualplane … --flag; echo $?`
            argv.append(word[:-1])
            break
        argv.append(word)
    return argv


def parse(argv: list[str]) -> None:
    """Parse ``argv`` down to its leaf command the way ``dualplane`` would, without running it."""
    command: click.core.Command = app
    context = command.make_context("dualplane", list(argv), resilient_parsing=False)
    while isinstance(command, TyperGroup):
        rest = [*context._protected_args, *context.args]  # typer 0.29 vendors click; no public name
        if not rest:
            return
        name, sub, args = command.resolve_command(context, rest)
        assert sub is not None and name is not None
        command = sub
        context = command.make_context(name, args, parent=context)


CASES = [(page, number, argv) for page in PAGES for number, argv in commands_in(page)]


def test_the_docs_show_commands() -> None:
    assert len(CASES) > 50, [str(page) for page in PAGES]


@pytest.mark.parametrize(
    ("page", "number", "argv"), CASES, ids=[f"{page.name}:{number}" for page, number, _ in CASES]
)
def test_a_command_in_the_docs_parses(page: Path, number: int, argv: list[str]) -> None:
    try:
        parse(argv)
    except typer.Exit:
        pass  # --help, --version: parsed, then asked to stop
    except click.exceptions.ClickException as error:
        pytest.fail(
            f"{page.relative_to(ROOT)}:{number}: dualplane {shlex.join(argv)}: {error.format_message()}"
        )
