"""Importing this module loads and warms the whole extraction stack: replay's fork server preloads it.

Every replay worker is then forked ready to extract (no imports, no first-page set-up), where a
spawned one would spend seconds on both before its first page.

It also imports the calling program's main script when :func:`data_plane.extractor.replay.replay` names it:
a forked worker re-runs that script's imports otherwise (0.4 s for the ``dualplane`` console
script), and Python 3.11's fork server ignores ``"__main__"`` in its preload list (it looks up a key
that ``multiprocessing.spawn.get_preparation_data`` never writes).
"""

from __future__ import annotations

import gc
import os
from multiprocessing import process, spawn

import confluent_kafka  # noqa: F401 (loaded here so forked workers share it)

import dualplane.connectors.storage.s3  # noqa: F401 (boto3, for pages whose body is claim-checked)
from dualplane import schemas
from dualplane.data_plane.extract.record import warm_up
from dualplane.data_plane.extractor.replay import MAIN_PATH_ENV

if main_path := os.environ.get(MAIN_PATH_ENV):
    # What the fork server means to do for "__main__": import it as __mp_main__ (its `if __name__ ==
    # "__main__"` part stays off), flagged as bootstrapping so an unguarded script that starts
    # processes fails loudly instead of forking servers recursively.
    process.current_process()._inheriting = True  # type: ignore[attr-defined]
    try:
        spawn.import_main_path(main_path)
    finally:
        del process.current_process()._inheriting  # type: ignore[attr-defined]
schemas.default_registry()  # parses every packaged schema once
warm_up()
gc.freeze()  # a worker's garbage collections then leave these objects, and their shared pages, alone
