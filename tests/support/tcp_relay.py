"""A TCP relay on loopback that a test can open and close: a real network outage of one endpoint."""

from __future__ import annotations

import socket
import threading
from contextlib import suppress


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class TcpRelay:
    """Forwards connections on ``127.0.0.1:port`` to ``target`` while open; refuses them while closed."""

    def __init__(self, port: int, target: tuple[str, int]) -> None:
        self.port = port
        self.target = target
        self._listener: socket.socket | None = None

    def open(self) -> None:
        listener = socket.create_server(("127.0.0.1", self.port), reuse_port=False)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def close(self) -> None:
        if self._listener is not None:
            with suppress(OSError):
                self._listener.close()
            self._listener = None

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed
            upstream = socket.create_connection(self.target)
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pipe, args=(source, sink), daemon=True).start()


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    with suppress(OSError):
        while data := source.recv(65536):
            sink.sendall(data)
    with suppress(OSError):
        sink.shutdown(socket.SHUT_WR)
