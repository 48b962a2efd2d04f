"""A :class:`~core.web.client.GuardedClient` on an event loop of its own thread, for blocking callers.

The frontier runs on pika's blocking loop: it submits requests here and either waits for one
(bounded by the request's own deadline) or carries on and looks at the future later, so that one
slow server never holds up the work of every other site.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future
from typing import Any

from dualplane.core.web.client import GuardedClient, HttpAnswer


class ClientThread:
    """Runs ``client`` on a daemon thread; at most ``max_in_flight`` requests at once, the rest queue.

    A queued request's deadline starts when it leaves the queue.
    """

    def __init__(self, client: GuardedClient, *, name: str = "guarded-http", max_in_flight: int = 32) -> None:
        if max_in_flight < 1:
            raise ValueError(f"max_in_flight must be >= 1, got {max_in_flight}")
        self.client = client
        self._loop = asyncio.new_event_loop()
        self._slots = asyncio.Semaphore(max_in_flight)
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)
        self._thread.start()
        self._closed = False

    def __repr__(self) -> str:
        return f"ClientThread({self.client!r}, name={self._thread.name!r})"

    def get(self, url: str, **options: Any) -> Future[HttpAnswer]:
        """:meth:`GuardedClient.get` on the client's thread; the future holds its answer or error."""
        if self._closed:
            raise RuntimeError("this ClientThread is closed; make a new one")
        return asyncio.run_coroutine_threadsafe(self._get(url, options), self._loop)

    def close(self) -> None:
        """Close the client's connections and stop the thread (requests still running are cancelled)."""
        if self._closed:
            return
        self._closed = True
        closing = asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop)
        closing.result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    async def _get(self, url: str, options: dict[str, Any]) -> HttpAnswer:
        async with self._slots:
            return await self.client.get(url, **options)

    async def _shutdown(self) -> None:
        running = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        await self.client.aclose()
