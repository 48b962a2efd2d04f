"""Each stage package is a face: it names what callers use, and every name loads (issue #37).

The shell (``dualplane/cli``, ``dualplane/demo``) may import only these faces, not the modules
behind them: an import-linter contract in pyproject.toml says so, and ``lint-imports`` checks it.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

STAGES = (
    "dualplane.control_plane.frontier",
    "dualplane.control_plane.fetcher",
    "dualplane.data_plane.extractor",
    "dualplane.data_plane.extract",
    "dualplane.data_plane.throttle",
)


def _type_checking_names(package: str) -> set[str]:
    """The names the package imports under ``if TYPE_CHECKING:`` (what type checkers see)."""
    module = importlib.import_module(package)
    tree = ast.parse(Path(str(module.__file__)).read_text())
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom)
                names |= {alias.asname or alias.name for alias in statement.names}
    return names


@pytest.mark.parametrize("package", STAGES)
def test_every_face_loads_and_type_checkers_see_the_same_names(package: str) -> None:
    module = importlib.import_module(package)
    faces = module.FACES
    assert sorted(module.__all__) == sorted(faces)
    assert _type_checking_names(package) == set(faces)
    for name in faces:
        assert getattr(module, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'not_a_face'"):
        _ = module.not_a_face


def test_reading_progress_through_the_face_loads_not_the_service() -> None:
    """`dualplane status` reads progress through the frontier's face, which loads only what is used:
    not the service with its robots.txt fetcher and SQLite state."""
    service = ("dualplane.control_plane.frontier.service", "dualplane.control_plane.frontier.robots")
    code = (
        "import sys; from dualplane.control_plane.frontier import ProgressReader, FinishRule; "
        f"print(sorted(m for m in {service!r} if m in sys.modules))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


def test_the_python_api_page_imports_only_what_dualplane_client_offers() -> None:
    """docs/python-api.md's examples compile and import from ``dualplane.client`` only names it has."""
    client = importlib.import_module("dualplane.client")
    page = (Path(__file__).parents[2] / "docs" / "python-api.md").read_text()
    blocks = page.split("```python\n")[1:]
    assert len(blocks) >= 2
    for block in blocks:
        tree = ast.parse(block.split("```")[0])
        imports = [node for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
        assert imports and all(node.module == "dualplane.client" for node in imports), ast.unparse(tree)
        for node in imports:
            assert {alias.name for alias in node.names} <= set(client.__all__)
