"""Provider settings, read from ``TIERWISE_*`` environment variables when a provider is built.

==============================  ===============================================================
``TIERWISE_BASE_URL``           the model server (OpenAI, OpenRouter, Ollama, vLLM…; for ``anthropic``
                                it defaults to ``https://api.anthropic.com``)
``TIERWISE_UPSTREAM_API``       the wire format it speaks: ``chat`` (Chat Completions, the default),
                                ``responses`` (OpenAI's Responses API) or ``anthropic`` (Messages)
``TIERWISE_API_KEY``            its key, if it needs one
``TIERWISE_MODEL``              the model id
``TIERWISE_FALLBACK_MODELS``    models to try in order when the model fails: ``a,b`` or ``["a","b"]``
``TIERWISE_CONNECT_TIMEOUT``    seconds to open a connection to the model server (default 5)
``TIERWISE_FIRST_BYTE_TIMEOUT`` seconds from sending a request until the server's answer begins (its
                                response headers; connecting included), per attempt (default 20). A
                                request that misses it is not retried (decision 74)
``TIERWISE_TIMEOUT``            seconds of silence allowed once the answer has begun (default 60)
``TIERWISE_MAX_RETRIES``        retries of 429 / 5xx / timeouts per model (default 3)
``TIERWISE_RETRY_BASE_DELAY``   first backoff in seconds (default 0.5), doubled each retry
``TIERWISE_RETRY_MAX_DELAY``    longest backoff and longest ``Retry-After`` honoured (default 30)
``TIERWISE_PRICES``             price overrides, JSON: ``{"my-model": {"input": 1.0, "output": 2.0}}``
                                (USD per 1M tokens; the key ``"*"`` prices every model without a price)
``TIERWISE_MODELS``             context windows and output limits the built-in table lacks or gets wrong,
                                JSON or the path of a JSON/TOML file: ``{"my-model": {"window": 32768,
                                "max_output": 4096}}`` (:func:`~tierwise.providers.windows.models_from_env`)
``TIERWISE_CACHE_HINTS``        ``true``: mark where each request's stable prefix ends with Anthropic-style
                                ``cache_control`` parts, for upstreams that cache only at explicit
                                breakpoints (Anthropic models via OpenRouter…); default ``false``
``TIERWISE_SUMMARY_MODEL``      the model that writes segment summaries (a small, cheap one is
                                usually right); unset, ``extractive`` or ``off``: no model summaries
                                (memory's own extractive ones, no model call of tierwise's own)
``TIERWISE_SUMMARY_MAX_TOKENS`` the summary model's response limit (default 400)
``TIERWISE_SUMMARY_INPUT_TOKENS`` the most text sent per summary request (default 6000; longer
                                stretches are cut in the middle, whole turns kept)
==============================  ===============================================================

Nothing is read at import: ``ProviderSettings()`` reads the environment each time it is built
(``ProviderSettings.load()`` does the same and turns a bad value into an ``InputError``).
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import Field, SecretStr, ValidationError, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict, SettingsError

from tierwise.errors import InputError
from tierwise.providers.errors import ProviderNotConfigured
from tierwise.providers.pricing import Price

__all__ = ["ProviderSettings"]

_TOKENS_HINT = "; set it to a whole number of tokens, 1 or more (e.g. {})"
_HINTS = {
    "upstream_api": "; set it to chat, responses or anthropic",
    "connect_timeout": "; set it to a number of seconds above 0 (e.g. 5)",
    "first_byte_timeout": "; set it to a number of seconds above 0 (e.g. 20)",
    "summary_max_tokens": _TOKENS_HINT.format(400),
    "summary_input_tokens": _TOKENS_HINT.format(6000),
}


class ProviderSettings(BaseSettings):
    """Where the model is and how to talk to it (see the module docstring for the variables).

    Example:
        >>> ProviderSettings(base_url="http://localhost:11434/v1", model="llama3.1:8b").require()
        ('http://localhost:11434/v1', 'llama3.1:8b')
    """

    model_config = SettingsConfigDict(env_prefix="TIERWISE_", extra="ignore", frozen=True)

    base_url: str | None = None
    upstream_api: Literal["chat", "responses", "anthropic"] = "chat"
    api_key: SecretStr | None = None
    model: str | None = None
    fallback_models: Annotated[list[str], NoDecode] = Field(default_factory=list)
    timeout: float = Field(default=60.0, gt=0)
    connect_timeout: float = Field(default=5.0, gt=0)
    first_byte_timeout: float = Field(default=20.0, gt=0)
    max_retries: int = Field(default=3, ge=0)
    retry_base_delay: float = Field(default=0.5, ge=0)
    retry_max_delay: float = Field(default=30.0, ge=0)
    prices: dict[str, Price] | None = None
    cache_hints: bool = False
    summary_model: str | None = None
    summary_max_tokens: int = Field(default=400, gt=0)
    summary_input_tokens: int = Field(default=6000, gt=0)

    @field_validator("upstream_api", mode="before")
    @classmethod
    def _blank_is_chat(cls, value: Any) -> Any:
        if isinstance(value, str):
            return value.strip().lower() or "chat"
        return value

    @field_validator("base_url", "model", "summary_model", mode="before")
    @classmethod
    def _blank_is_none(cls, value: Any) -> Any:
        if isinstance(value, str):
            return value.strip() or None
        return value

    @field_validator("summary_max_tokens", "summary_input_tokens", mode="before")
    @classmethod
    def _blank_is_default(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, str) and not value.strip():
            return cls.model_fields[str(info.field_name)].default
        return value

    @field_validator("api_key", mode="before")
    @classmethod
    def _blank_key_is_none(cls, value: Any) -> Any:
        if isinstance(value, str) and not value.strip():
            return None
        return value

    @field_validator("fallback_models", mode="before")
    @classmethod
    def _split_models(cls, value: Any) -> Any:
        if isinstance(value, str):
            text = value.strip()
            if text.startswith("["):
                return json.loads(text)
            return [part.strip() for part in text.split(",") if part.strip()]
        return value

    @classmethod
    def load(cls) -> ProviderSettings:
        """Read the environment now; a bad value raises :class:`InputError` naming the variable."""
        try:
            return cls()
        except ValidationError as exc:
            problems = "; ".join(_problem(error["loc"], error["msg"]) for error in exc.errors())
            raise InputError(f"invalid provider settings in the environment: {problems}") from exc
        except SettingsError as exc:
            raise InputError(
                f"invalid provider settings in the environment: {exc}; TIERWISE_PRICES and "
                "TIERWISE_FALLBACK_MODELS take JSON"
            ) from exc

    def require(self) -> tuple[str, str]:
        """``(base_url, model)``, or :class:`ProviderNotConfigured` naming the variables to set."""
        required = (("TIERWISE_BASE_URL", self.base_url), ("TIERWISE_MODEL", self.model))
        missing = [env for env, value in required if not value]
        if missing or self.base_url is None or self.model is None:
            raise ProviderNotConfigured(missing)
        return self.base_url, self.model


def _problem(location: tuple[int | str, ...], message: str) -> str:
    """One bad setting: its variable, what is wrong, and (for the summary settings) the fix."""
    if not location:
        return message
    field = str(location[0])
    return f"TIERWISE_{field.upper()}: {message}{_HINTS.get(field, '')}"
