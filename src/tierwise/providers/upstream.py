"""The configured upstream: the provider of the wire format ``TIERWISE_UPSTREAM_API`` names.

Example:
    >>> from tierwise.providers.settings import ProviderSettings
    >>> settings = ProviderSettings(base_url="http://localhost:11434/v1", model="llama3.1:8b")
    >>> upstream_provider(settings).wire
    'chat'
"""

from __future__ import annotations

from typing import Any

from tierwise.providers.http import HTTPProvider
from tierwise.providers.settings import ProviderSettings

__all__ = ["upstream_provider"]


def upstream_provider(settings: ProviderSettings | None = None, **options: Any) -> HTTPProvider[Any]:
    """The provider for ``settings.upstream_api`` (``chat``, ``responses``, ``anthropic``).

    ``settings`` defaults to the ``TIERWISE_*`` environment; ``options`` are the provider's keyword
    arguments (``model``…).

    Raises:
        ProviderNotConfigured: no base URL (one is needed for ``chat`` and ``responses``) or no model.
        InputError: a ``TIERWISE_*`` variable has a bad value.
    """
    settings = settings if settings is not None else ProviderSettings.load()
    if settings.upstream_api == "responses":
        from tierwise.providers.responses_api import ResponsesProvider

        return ResponsesProvider(settings, **options)
    if settings.upstream_api == "anthropic":
        from tierwise.providers.anthropic_api import AnthropicProvider

        return AnthropicProvider(settings, **options)
    from tierwise.providers.openai_compat import OpenAICompatProvider

    return OpenAICompatProvider(settings, **options)
