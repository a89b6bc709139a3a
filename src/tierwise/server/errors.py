"""The HTTP service's own error: what a route raises to answer with a status and a message.

Routes import it from here, not from :mod:`tierwise.server.app` (which imports every router to mount
it), so the server has no import circle. ``app.py`` turns it into ``{"error": message}`` with its
status and headers; the ``/v1`` routes answer in OpenAI's error shape instead
(:mod:`tierwise.server.openai_errors`).
"""

from __future__ import annotations

from tierwise.errors import UserError

__all__ = ["ApiError"]


class ApiError(UserError):
    """An error with its HTTP status (raised by routes; shown as ``{"error": message}``)."""

    def __init__(self, status: int, message: str, *, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.headers = headers
