"""Without the extra ``dualplane[local]``, what needs it says so in one line, not a traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest

from dualplane.core.settings import Settings
from dualplane.extras import ExtraMissing
from dualplane.stack.s3 import S3Endpoint

pytestmark = pytest.mark.unit

# `dualplane report` in a Python where jinja2 cannot be imported (as if never installed).
WITHOUT_JINJA2 = (
    "import sys; sys.modules['jinja2'] = None; sys.argv = ['dualplane', 'report', 'some-job']; "
    "from dualplane.cli.main import main; main()"
)


def test_report_without_the_extra_fails_with_one_line_naming_it() -> None:
    command = [sys.executable, "-c", WITHOUT_JINJA2]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "`dualplane report` needs jinja2" in lines[0]
    assert "pip install 'dualplane[local]'" in lines[0]


def test_the_local_s3_endpoint_without_the_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "moto", None)
    monkeypatch.setitem(sys.modules, "moto.server", None)
    with pytest.raises(ExtraMissing, match=r"needs moto .*pip install 'dualplane\[local\]'"):
        S3Endpoint(Settings()).check_prerequisites()
