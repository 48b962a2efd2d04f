"""Our code installs as one package, ``dualplane``: it cannot collide with a user's ``core`` or ``schemas``.

The repository keeps its top-level folders (``control_plane/``, ``data_plane/``, ``schemas/``,
``connectors/``, ``core/``, ``brokers/``); ``dualplane/<folder>`` is a symlink to each, and the code
imports them as ``dualplane.<folder>``. These tests fail if a module imports a folder by its bare name
(two copies of a module, two settings classes) or if the wheel ships one at the top level again.
"""

from __future__ import annotations

import email
import json
import pkgutil
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.support.paths import REPO_ROOT

FOLDERS = ("core", "brokers", "schemas", "connectors", "control_plane", "data_plane")
OPTIONAL = ("moto", "matplotlib", "jinja2")  # the `local` extra: the embedded stack, the report's plots

# Imports every module of the package in a fresh interpreter and prints the bare folder names imported.
PROBE = """
import importlib, json, pkgutil, sys
import dualplane
failed = {}
for info in pkgutil.walk_packages(dualplane.__path__, "dualplane."):
    if info.name.endswith("__main__"):  # runs the CLI
        continue
    try:
        importlib.import_module(info.name)
    except Exception as error:  # an optional extra missing is fine; a wrong import is what we look for
        failed[info.name] = repr(error)
bare = sorted(name for name in sys.modules if name.split(".")[0] in %r)
print(json.dumps({"bare": bare, "failed": failed, "modules": len(sys.modules)}))
"""


@pytest.mark.unit
def test_every_folder_is_a_subpackage_of_dualplane() -> None:
    for folder in FOLDERS:
        link = REPO_ROOT / "dualplane" / folder
        assert link.is_symlink() and link.resolve() == (REPO_ROOT / folder).resolve(), link


@pytest.mark.unit
def test_no_module_imports_a_folder_by_its_bare_name() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE % (FOLDERS,)],
        cwd="/",  # outside the checkout, where the bare folders are not on sys.path by accident
        env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["bare"] == []
    assert not [name for name, error in found["failed"].items() if "No module named" in error
                and any(f"'{folder}" in error for folder in FOLDERS)]  # fmt: skip
    assert len(list(pkgutil.walk_packages([str(REPO_ROOT / "dualplane")]))) > 50


@pytest.mark.integration
@pytest.mark.slow
def test_the_wheel_installs_one_top_level_package_and_no_local_extra(tmp_path: Path) -> None:
    # Built from a copy: pip builds in the tree it is given and would leave build/ and *.egg-info behind.
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO_ROOT / name, source / name)
    for folder in ("dualplane", *FOLDERS):
        shutil.copytree(REPO_ROOT / folder, source / folder, symlinks=True,
                        ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(source)],
        check=True,
        capture_output=True,
        timeout=240,
    )
    (wheel,) = tmp_path.glob("dualplane-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = email.message_from_bytes(
            archive.read(next(name for name in names if name.endswith(".dist-info/METADATA")))
        )
    assert {name.split("/")[0] for name in names} == {"dualplane", wheel.name.split("-py")[0] + ".dist-info"}
    assert any(name.startswith("dualplane/schemas/avro/") and name.endswith(".avsc") for name in names)
    for folder in FOLDERS:
        assert f"dualplane/{folder}/__init__.py" in names
    required = [line for line in metadata.get_all("Requires-Dist") or [] if "extra ==" not in line]
    assert not [line for line in required if line.split()[0].split("[")[0].lower() in OPTIONAL], required
