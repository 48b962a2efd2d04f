"""Where the repository is, for tests that start processes from its root (wherever the test file sits)."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
