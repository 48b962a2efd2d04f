"""A fetcher process for control-plane tests: the real TaskRunner with a plain HTTP GET as work.

Run as ``python -m tests.support.fetch_worker``; it reads its settings (queue names, P_d,
delays) from the ``DUALPLANE_*`` environment like any dualplane process, and stops on SIGTERM.
"""

from __future__ import annotations

import logging
import signal
import sys

import httpx

from dualplane.brokers.amqp.messages import CrawlTask
from dualplane.control_plane.fetcher.retry_policy import Outcome
from dualplane.control_plane.fetcher.runner import FetchResult, TaskRunner
from dualplane.core.settings import Settings
from dualplane.data_plane.throttle import ThrottleView


async def http_get(client: httpx.AsyncClient, task: CrawlTask) -> FetchResult:
    try:
        response = await client.get(task.url)
    except httpx.TimeoutException as error:
        return FetchResult(Outcome.TIMEOUT, detail=str(error))
    except httpx.HTTPError as error:
        return FetchResult(Outcome.CONNECTION_ERROR, detail=str(error))
    status = response.status_code
    if status == 404:
        return FetchResult(Outcome.NOT_FOUND, status)
    if status >= 500:
        return FetchResult(Outcome.SERVER_ERROR, status)
    return FetchResult(Outcome.OK, status)


def main() -> None:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("pika").setLevel(logging.WARNING)
    settings = Settings.from_env()
    client = httpx.AsyncClient(timeout=30)
    runner = TaskRunner(settings, lambda task: http_get(client, task), ThrottleView(settings))
    consumer = runner.consumer()
    signal.signal(signal.SIGTERM, lambda *_: consumer.stop())
    consumer.run()
    runner.close()


if __name__ == "__main__":
    main()
