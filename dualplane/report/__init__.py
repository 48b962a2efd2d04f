"""``dualplane report``: a crawl job as one self-contained HTML page with charts (see :mod:`.page`)."""

from dualplane.report.data import JobData, read_job
from dualplane.report.page import write_report

__all__ = ["JobData", "read_job", "write_report"]
