"""Run the app with uvicorn in a background thread on a free loopback port (benchmarks, tests)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["free_port", "serve_in_thread"]


def free_port(host: str = "127.0.0.1") -> int:
    """A port nobody listens on right now (the OS picks it)."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def serve_in_thread(app: Any, *, host: str = "127.0.0.1", timeout_s: float = 20) -> Iterator[str]:
    """Serve ``app`` (any ASGI app) with uvicorn in a daemon thread; yield its base URL; stop it after.

    Raises:
        RuntimeError: the server did not start within ``timeout_s`` seconds.
    """
    import uvicorn

    port = free_port(host)
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, name=f"uvicorn-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise RuntimeError(f"the server on {host}:{port} did not start within {timeout_s:g} s")
        time.sleep(0.02)
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
