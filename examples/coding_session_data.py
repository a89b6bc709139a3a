"""The coding session's script: dialogue, the files the assistant reads and writes, the tool output.

Part of ``make_coding_session.py`` (stdlib only). Each function adds one stretch of the day to a
``Session`` (``user``, ``say``, ``call``, ``calls``), one module per stretch; the helpers that build
tool calls and print their output the way the tools would are in ``coding_session_tools.py``.
The repository is ``ledgerline`` at /home/ana/ledgerline; the test suite starts at 187 tests.
"""

from __future__ import annotations

from coding_session_auth import jwt_fix
from coding_session_db import async_db
from coding_session_projects import cursor_pagination
from coding_session_ship import docker_image, release

__all__ = ["async_db", "cursor_pagination", "docker_image", "jwt_fix", "release"]
