"""``dualplane report``: a crawl job as one self-contained HTML page with charts (see :mod:`.page`)."""

from dualplane.extras import require

# The page and its charts come with the extra `dualplane[local]`: without it, one line says so.
require("jinja2", "`dualplane report`")
require("matplotlib", "`dualplane report`")

from dualplane.report.data import JobData, read_job  # noqa: E402
from dualplane.report.page import write_report  # noqa: E402

__all__ = ["JobData", "read_job", "write_report"]
