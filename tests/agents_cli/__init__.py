"""Opt-in: real coding-agent CLIs (Codex CLI, Claude Code) run through tierwise on loopback."""
