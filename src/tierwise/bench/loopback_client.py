"""The load benchmarks' HTTP client: keep-alive HTTP/1.1 on asyncio streams, reading server-sent events.

Written for this one job: it is the instrument, and must cost little next to what it measures
(``httpx`` spent ~10 ms of CPU per streamed request in :mod:`tierwise.bench.proxy`, more than the proxy
under test, and 50 of them in one process delayed their own reads).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

from tierwise.bench.wires import stream_done

__all__ = ["Connection"]


class Connection:
    """A keep-alive HTTP/1.1 connection that POSTs JSON and reads a server-sent-event stream."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def _send(self, path: str, body: bytes, headers: Mapping[str, str]) -> asyncio.StreamReader:
        """Send a POST; the reader, at the status line."""
        if self.writer is None or self.reader is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        head = [f"POST {path} HTTP/1.1", f"Host: {self.host}:{self.port}", "Content-Type: application/json"]
        head += [f"{name}: {value}" for name, value in headers.items()]
        head.append(f"Content-Length: {len(body)}")
        self.writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        return self.reader

    async def post_json(self, path: str, body: bytes, headers: Mapping[str, str]) -> Any:
        """POST ``body``; the JSON of a 2xx answer with a ``Content-Length``.

        Raises:
            ConnectionError: the status was not 2xx, or the body had no length.
        """
        reader = await self._send(path, body, headers)
        status = (await reader.readline()).split(b" ", 2)
        length = None
        while (line := await reader.readline()) not in (b"\r\n", b""):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":", 1)[1])
        if length is None:
            raise ConnectionError("the answer had no Content-Length")
        data = await reader.readexactly(length)
        if len(status) < 2 or not status[1].startswith(b"2"):
            raise ConnectionError(f"status {status!r}: {data[:200]!r}")
        return json.loads(data)

    async def post_stream(
        self, path: str, body: bytes, headers: Mapping[str, str], wire: str = "chat"
    ) -> list[str]:
        """POST ``body``; the ``data:`` payloads of the streamed answer up to ``wire``'s last event.

        Raises:
            ConnectionError: the connection closed early, or the status was not 200.
        """
        reader = await self._send(path, body, headers)
        status = (await reader.readline()).split(b" ", 2)
        if len(status) < 2 or status[1] != b"200":
            raise ConnectionError(f"status {status!r}")
        chunked = False
        while (line := await reader.readline()) not in (b"\r\n", b""):
            chunked = chunked or line.lower().startswith(b"transfer-encoding: chunked")
        if not chunked:
            raise ConnectionError("the answer was not streamed")
        payloads: list[str] = []
        pending = b""
        while True:
            size = int((await reader.readline()).split(b";", 1)[0], 16)
            data = await reader.readexactly(size + 2)
            if size == 0:
                raise ConnectionError("the stream ended before [DONE]")
            pending = (pending + data[:-2]).replace(b"\r\n", b"\n")  # the web chat ends lines in CRLF
            *events, pending = pending.split(b"\n\n")
            for event in events:
                data = event[6:] if event.startswith(b"data: ") else event.partition(b"\ndata: ")[2]
                if data:
                    payload = data.decode()
                    if stream_done(wire, payload):
                        await self._drain(reader)
                        return payloads
                    payloads.append(payload)

    @staticmethod
    async def _drain(reader: asyncio.StreamReader) -> None:
        """Read the rest of the chunked body (its last chunk) so the connection can be reused."""
        while True:
            size = int((await reader.readline()).split(b";", 1)[0], 16)
            await reader.readexactly(size + 2)
            if size == 0:
                return

    def close(self) -> None:
        """Close the connection."""
        if self.writer is not None:
            self.writer.close()
