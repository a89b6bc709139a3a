"""Dead upstreams on loopback, for deadline tests (issue 32): one that accepts and never answers,
and a port that refuses."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from tierwise.server.threaded import free_port

__all__ = ["Silent", "refusing_url", "silent_upstream"]


class Silent:
    """A server that accepts connections, reads what comes and never answers; ``accepted`` counts them."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/v1"
        self.accepted = 0
        self._held: list[socket.socket] = []
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="silent-upstream", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        self.listener.settimeout(0.05)
        while not self._closed.is_set():
            try:
                connection, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted += 1
            self._held.append(connection)  # open, unanswered, until the test ends

    def close(self) -> None:
        self._closed.set()
        self._thread.join(2)
        for connection in self._held:
            connection.close()
        self.listener.close()


@contextmanager
def silent_upstream() -> Iterator[Silent]:
    """A :class:`Silent` server for the block."""
    server = Silent()
    try:
        yield server
    finally:
        server.close()


def refusing_url() -> str:
    """A loopback base URL nobody listens on: every connection is refused at once."""
    return f"http://127.0.0.1:{free_port()}/v1"
