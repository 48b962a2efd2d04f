"""Build ``docs_pages.jsonl.xz``: large built documentation pages for the extraction-speed benchmark.

    python benchmarks/data/build_docs_pages.py /path/to/numpy-doc-checkout.git

Every HTML page of at least ``MIN_BYTES`` under ``VERSION/`` of a git checkout of NumPy's built
documentation (the ``numpy/doc`` repository, Sphinx with the PyData theme), read from ``HEAD`` with
``git show`` (a bare mirror works), one JSON object a line: ``id``, ``source``, ``url``, ``html``.
These pages are timed, not scored: they have no truth.
"""

from __future__ import annotations

import json
import lzma
import subprocess
import sys
from pathlib import Path

VERSION = "2.5"
MIN_BYTES = 100_000
BASE_URL = "https://numpy.org/doc/"
OUT = Path(__file__).resolve().parent / "docs_pages.jsonl.xz"


def main() -> None:
    git_dir = sys.argv[1]
    listing = subprocess.run(
        ["git", "--git-dir", git_dir, "ls-tree", "-r", "-l", "HEAD", VERSION],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    paths = sorted(
        path
        for _mode, _kind, _sha, size, path in (line.split(maxsplit=4) for line in listing.splitlines())
        if path.endswith(".html") and int(size) >= MIN_BYTES
    )
    with lzma.open(OUT, "wt", encoding="utf-8", preset=9) as out:
        for path in paths:
            html = subprocess.run(
                ["git", "--git-dir", git_dir, "show", f"HEAD:{path}"], check=True, capture_output=True
            ).stdout.decode("utf-8")
            page = {"id": f"numpy-doc/{path}", "source": "numpy/doc", "url": BASE_URL + path, "html": html}
            out.write(json.dumps(page, ensure_ascii=False) + "\n")
    print(f"{len(paths)} pages -> {OUT}")


if __name__ == "__main__":
    main()
