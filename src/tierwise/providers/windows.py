"""What a model can take: its context window and output limit, from a built-in table or ``TIERWISE_MODELS``.

The OpenAI-compatible endpoint packs each request under the upstream model's window (decision 68):
a model is looked up by its exact id, then by the part after the last ``/`` (OpenRouter's
``openai/gpt-4o`` finds ``gpt-4o``), then by the longest table entry its id starts with, followed by
``-``, ``:``, ``@`` or ``_`` (a dated or tagged id: ``gpt-4o-2024-08-06`` finds ``gpt-4o``,
``claude-3-5-sonnet@20240620`` and ``llama3.1:8b`` theirs; ``gpt-4.5`` never finds ``gpt-4``). An
unknown model gets ``None``: the caller keeps its own budget.

``TIERWISE_MODELS`` adds or replaces entries — a JSON object, or the path to a ``.json`` or ``.toml``
file holding one::

    TIERWISE_MODELS='{"my-model": {"window": 32768, "max_output": 4096}}'

``window`` is required; ``max_output`` (the most an answer may be) and ``max_input`` (the most a
prompt may be, for models that cap it below ``window - max_output``) are optional. A self-hosted
server that runs a model with a smaller context than the model's own (Ollama's ``num_ctx``, vLLM's
``--max-model-len``) needs an entry saying so.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from tierwise.errors import InputError

__all__ = ["MODELS_VARIABLE", "WINDOWS", "WINDOWS_AS_OF", "ModelLimits", "lookup_limits", "models_from_env"]

MODELS_VARIABLE = "TIERWISE_MODELS"
"""The environment variable of the overrides (JSON, or a path to a JSON or TOML file)."""

_SEPARATORS = frozenset("-:@_")


@dataclass(frozen=True, slots=True)
class ModelLimits:
    """A model's context window and, where it has them, its output and input limits, in tokens.

    Example:
        >>> limits = ModelLimits(window=128_000, max_output=16_384)
        >>> limits.output_limit, limits.prompt_room(8_192)
        (16384, 119808)
    """

    window: int
    max_output: int | None = None
    max_input: int | None = None

    def __post_init__(self) -> None:
        for name in ("window", "max_output", "max_input"):
            value = getattr(self, name)
            if value is None and name != "window":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(
                    f"a model's {name} must be a whole number of tokens, 1 or more, got {value!r}"
                )
        if self.max_output is not None and self.max_output > self.window:
            raise InputError(f"max_output ({self.max_output}) is larger than the window ({self.window})")

    @property
    def output_limit(self) -> int:
        """The most tokens an answer may be: ``max_output``, else the whole window."""
        return self.max_output if self.max_output is not None else self.window

    def prompt_room(self, answer: int) -> int:
        """The most prompt tokens the model takes beside ``answer`` tokens of answer (0 when none)."""
        room = self.window - answer
        if self.max_input is not None:
            room = min(room, self.max_input)
        return max(room, 0)


WINDOWS_AS_OF = "2025-11"
"""When the figures below were taken from the vendors' model pages."""

_OPENAI = {
    "gpt-3.5-turbo": ModelLimits(16_385, 4_096),
    "gpt-4": ModelLimits(8_192, 8_192),
    "gpt-4-turbo": ModelLimits(128_000, 4_096),
    "gpt-4-1106-preview": ModelLimits(128_000, 4_096),
    "gpt-4-0125-preview": ModelLimits(128_000, 4_096),
    "gpt-4o": ModelLimits(128_000, 16_384),
    "gpt-4o-2024-05-13": ModelLimits(128_000, 4_096),
    "gpt-4o-mini": ModelLimits(128_000, 16_384),
    "chatgpt-4o-latest": ModelLimits(128_000, 16_384),
    "gpt-4.1": ModelLimits(1_047_576, 32_768),
    "gpt-4.1-mini": ModelLimits(1_047_576, 32_768),
    "gpt-4.1-nano": ModelLimits(1_047_576, 32_768),
    "gpt-4.5-preview": ModelLimits(128_000, 16_384),
    "o1": ModelLimits(200_000, 100_000),
    "o1-pro": ModelLimits(200_000, 100_000),
    "o1-mini": ModelLimits(128_000, 65_536),
    "o1-preview": ModelLimits(128_000, 32_768),
    "o3": ModelLimits(200_000, 100_000),
    "o3-pro": ModelLimits(200_000, 100_000),
    "o3-mini": ModelLimits(200_000, 100_000),
    "o4-mini": ModelLimits(200_000, 100_000),
    "gpt-5": ModelLimits(400_000, 128_000, 272_000),
    "gpt-5-mini": ModelLimits(400_000, 128_000, 272_000),
    "gpt-5-nano": ModelLimits(400_000, 128_000, 272_000),
    "gpt-5-chat": ModelLimits(128_000, 16_384),
    "gpt-oss-120b": ModelLimits(131_072),
    "gpt-oss-20b": ModelLimits(131_072),
}

_ANTHROPIC_BY_FAMILY = {  # Anthropic's ids (claude-3-5-sonnet-20241022) and OpenRouter's (claude-3.5-sonnet)
    ("claude-3-haiku", "claude-3-opus", "claude-3-sonnet"): ModelLimits(200_000, 4_096),
    ("claude-3-5-sonnet", "claude-3.5-sonnet", "claude-3-5-haiku", "claude-3.5-haiku"): ModelLimits(
        200_000, 8_192
    ),
    ("claude-3-7-sonnet", "claude-3.7-sonnet", "claude-sonnet-4", "claude-4-sonnet"): ModelLimits(
        200_000, 64_000
    ),
    ("claude-opus-4", "claude-4-opus", "claude-opus-4-1", "claude-opus-4.1"): ModelLimits(200_000, 32_000),
    (
        "claude-sonnet-4-5",
        "claude-sonnet-4.5",
        "claude-haiku-4-5",
        "claude-haiku-4.5",
        "claude-opus-4-5",
        "claude-opus-4.5",
    ): ModelLimits(200_000, 64_000),
}

_GOOGLE = {
    "gemini-1.5-pro": ModelLimits(2_097_152, 8_192),
    "gemini-1.5-flash": ModelLimits(1_048_576, 8_192),
    "gemini-2.0-flash": ModelLimits(1_048_576, 8_192),
    "gemini-2.0-flash-lite": ModelLimits(1_048_576, 8_192),
    "gemini-2.5-pro": ModelLimits(1_048_576, 65_536),
    "gemini-2.5-flash": ModelLimits(1_048_576, 65_536),
    "gemini-2.5-flash-lite": ModelLimits(1_048_576, 65_536),
}

_OPEN_WEIGHTS = {  # no separate output limit: an answer may take what the prompt leaves
    # Meta: Hugging Face / OpenRouter / Groq ids (llama-3.1-8b-instruct), Together's (Meta-Llama-3.1-…),
    # Ollama's (llama3.1:8b)
    "llama-3": ModelLimits(8_192),
    "llama3": ModelLimits(8_192),
    "meta-llama-3": ModelLimits(8_192),
    **{
        f"{prefix}{version}": ModelLimits(131_072)
        for prefix in ("llama-", "llama", "meta-llama-")
        for version in ("3.1", "3.2", "3.3")
    },
    # Mistral
    "mistral": ModelLimits(32_768),
    "open-mistral-7b": ModelLimits(32_768),
    "mixtral-8x7b": ModelLimits(32_768),
    "open-mixtral-8x7b": ModelLimits(32_768),
    "mixtral-8x22b": ModelLimits(65_536),
    "open-mixtral-8x22b": ModelLimits(65_536),
    "mistral-large": ModelLimits(131_072),
    "mistral-medium": ModelLimits(131_072),
    "mistral-small": ModelLimits(131_072),
    "mistral-nemo": ModelLimits(131_072),
    "open-mistral-nemo": ModelLimits(131_072),
    "ministral-3b": ModelLimits(131_072),
    "ministral-8b": ModelLimits(131_072),
    "pixtral-large": ModelLimits(131_072),
    "pixtral-12b": ModelLimits(131_072),
    "codestral": ModelLimits(256_000),
    # DeepSeek (its API and the open weights)
    "deepseek-chat": ModelLimits(128_000, 8_192),
    "deepseek-v3": ModelLimits(128_000, 8_192),
    "deepseek-reasoner": ModelLimits(128_000, 65_536),
    "deepseek-r1": ModelLimits(128_000, 32_768),
    # Qwen (Alibaba's API and the open weights, at their native context)
    "qwen-max": ModelLimits(32_768, 8_192),
    "qwen-plus": ModelLimits(131_072, 8_192),
    "qwen-turbo": ModelLimits(131_072, 8_192),
    "qwen-2.5": ModelLimits(32_768, 8_192),
    "qwen2.5": ModelLimits(32_768, 8_192),
    "qwen3": ModelLimits(32_768),
    "qwen3-coder": ModelLimits(262_144, 65_536),
    "qwq": ModelLimits(131_072),
}

_TABLE: dict[str, ModelLimits] = {
    **_OPENAI,
    **{name: limits for names, limits in _ANTHROPIC_BY_FAMILY.items() for name in names},
    **_GOOGLE,
    **_OPEN_WEIGHTS,
}

WINDOWS: Mapping[str, ModelLimits] = MappingProxyType(_TABLE)
"""The built-in table (read-only), by model id in lower case; see :data:`WINDOWS_AS_OF`."""


def _tail(model_id: str) -> str:
    return model_id.rsplit("/", 1)[-1]


def lookup_limits(model: str, overrides: Mapping[str, ModelLimits] | None = None) -> ModelLimits | None:
    """The limits of ``model``: exact id, then the id after its last ``/``, then the longest prefix.

    A prefix counts only when the id goes on with ``-``, ``:``, ``@`` or ``_`` after it. ``overrides``
    (``TIERWISE_MODELS``) take precedence over the built-in table. ``None``: the model is unknown.

    Example:
        >>> lookup_limits("gpt-4o-2024-08-06")
        ModelLimits(window=128000, max_output=16384, max_input=None)
        >>> lookup_limits("anthropic/claude-sonnet-4.5").max_output, lookup_limits("my-local-model")
        (64000, None)
        >>> lookup_limits("my-local-model", {"my-local-model": ModelLimits(32_768)}).window
        32768
    """
    table = {key.lower(): limits for key, limits in {**_TABLE, **(overrides or {})}.items()}
    wanted = model.strip().lower()
    names = (wanted, _tail(wanted))
    for name in names:
        if name in table:
            return table[name]
    best = ""
    for name in names:
        for key in table:
            if len(key) > len(best) and name.startswith(key) and name[len(key) : len(key) + 1] in _SEPARATORS:
                best = key
    return table[best] if best else None


def models_from_env() -> dict[str, ModelLimits]:
    """``TIERWISE_MODELS``, read now: a JSON object, or the path to a JSON or TOML file holding one.

    Unset or blank: no overrides.

    Raises:
        InputError: a file that is missing or not JSON/TOML, or an entry without a whole-number
            ``window`` — naming the variable, the entry and the fix.
    """
    raw = os.environ.get(MODELS_VARIABLE, "").strip()
    if not raw:
        return {}
    example = '{"my-model": {"window": 32768, "max_output": 4096}}'
    fix = f"set {MODELS_VARIABLE} to a JSON object like {example}, or to a .json or .toml file holding one"
    if raw.startswith(("{", "[")):  # JSON (a list is named as such below), else a file's path
        where = MODELS_VARIABLE
        try:
            data: Any = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InputError(f"{MODELS_VARIABLE} is not valid JSON ({exc}); {fix}") from None
    else:
        path = Path(raw).expanduser()
        where = f"{MODELS_VARIABLE} file {str(path)!r}"
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise InputError(f"{where} cannot be read ({exc.strerror or exc}); {fix}") from None
        try:
            data = tomllib.loads(text) if path.suffix.lower() == ".toml" else json.loads(text)
        except (tomllib.TOMLDecodeError, json.JSONDecodeError, UnicodeDecodeError) as exc:
            kind = "TOML" if path.suffix.lower() == ".toml" else "JSON"
            raise InputError(f"{where} is not valid {kind} ({exc}); {fix}") from None
    if not isinstance(data, dict):
        raise InputError(f"{where} holds a {type(data).__name__}, not an object of models; {fix}")
    return {str(name): _entry(where, str(name), entry, fix) for name, entry in data.items()}


def _entry(where: str, name: str, entry: Any, fix: str) -> ModelLimits:
    """One model's entry of ``TIERWISE_MODELS``."""
    if not isinstance(entry, dict):
        raise InputError(f"{where}: {name!r} must be an object with a window, got {entry!r}; {fix}")
    unknown = sorted(set(entry) - {"window", "max_output", "max_input"})
    if unknown:
        raise InputError(
            f"{where}: {name!r} has unknown keys {unknown}; use window, max_output and max_input; {fix}"
        )
    if "window" not in entry:
        raise InputError(f"{where}: {name!r} has no window (tokens); {fix}")
    try:
        return ModelLimits(entry["window"], entry.get("max_output"), entry.get("max_input"))
    except InputError as exc:
        raise InputError(f"{where}: {name!r}: {exc}; {fix}") from None
