"""A relay in front of a Kafka broker that a test can stall: Kafka's answers held back, on purpose.

A plain TCP relay is not enough for Kafka: a client asks the bootstrap address for metadata, then
connects to the address the broker *advertises*, which is the broker's own. This relay rewrites
that address in every answer to its own port (host and port are followed by nothing else in the
Metadata and FindCoordinator answers, so the same bytes with the port swapped keep every length),
so a client bootstrapped here stays here.

``stall_answers()`` holds back everything the broker sends (requests still reach it): a producer's
messages are written but it never hears so; ``stall_requests()`` holds back what clients send.
Held bytes are kept and delivered in order after ``resume()``. Both directions stall at frame
boundaries, never mid-frame.
"""

from __future__ import annotations

import socket
import struct
import threading
from contextlib import suppress

from tests.support.tcp_relay import free_port


class KafkaRelay:
    """Relays ``127.0.0.1:port`` to ``target`` (a Kafka broker), advertising itself; stallable."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self._answers = threading.Event()
        self._requests = threading.Event()
        self._answers.set()
        self._requests.set()
        self._swap = (
            target[0].encode() + struct.pack(">i", target[1]),
            target[0].encode() + struct.pack(">i", self.port),
        )
        self._listener = socket.create_server(("127.0.0.1", self.port))
        self._sockets: list[socket.socket] = [self._listener]
        threading.Thread(target=self._accept, name="kafka-relay", daemon=True).start()

    def stall_answers(self) -> None:
        self._answers.clear()

    def stall_requests(self) -> None:
        self._requests.clear()

    def resume(self) -> None:
        self._answers.set()
        self._requests.set()

    def close(self) -> None:
        self.resume()
        for sock in self._sockets:
            with suppress(OSError):
                sock.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            self._sockets += [client, upstream]
            for args in ((client, upstream, self._requests, False), (upstream, client, self._answers, True)):
                threading.Thread(target=self._pipe, args=args, daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket, gate: threading.Event, answers: bool) -> None:
        with suppress(OSError):
            while (frame := _read_frame(source)) is not None:
                gate.wait()
                if answers:
                    frame = frame.replace(*self._swap)
                sink.sendall(frame)
        for sock in (source, sink):
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


def _read_frame(sock: socket.socket) -> bytes | None:
    """One Kafka protocol frame (its 4-byte size included), or None at the end of the stream."""
    head = _read_exactly(sock, 4)
    if head is None:
        return None
    body = _read_exactly(sock, struct.unpack(">i", head)[0])
    return None if body is None else head + body


def _read_exactly(sock: socket.socket, count: int) -> bytes | None:
    data = bytearray()
    while len(data) < count:
        chunk = sock.recv(min(count - len(data), 1 << 20))
        if not chunk:
            return None
        data += chunk
    return bytes(data)
