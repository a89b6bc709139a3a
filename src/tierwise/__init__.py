"""tierwise: decides, for every LLM call, what goes into the prompt.

The public API is re-exported here; everything else is internal and may change.

Example:
    >>> import tierwise
    >>> layers = tierwise.conversation_layers([{"role": "user", "content": "What's due today?"}])
    >>> tierwise.pack(layers, tierwise.Budget(window=4096)).report.total_tokens
    11
"""

from tierwise.budget import BANDS, Budget, PruningBand, band_for_health, budget_health
from tierwise.errors import BudgetError, InputError, TierwiseError, UserError, VocabularyError
from tierwise.packing import (
    ContextLayer,
    LayerReport,
    Pack,
    Packer,
    PackReport,
    conversation_layers,
    group_messages,
    pack,
    parse_conversation,
    truncate_text,
)
from tierwise.tokens import TokenCounter, count_tokens, get_counter, load_encoding

__version__ = "0.1.0"

__all__ = [
    "BANDS",
    "Budget",
    "BudgetError",
    "ContextLayer",
    "InputError",
    "LayerReport",
    "Pack",
    "PackReport",
    "Packer",
    "PruningBand",
    "TierwiseError",
    "TokenCounter",
    "UserError",
    "VocabularyError",
    "band_for_health",
    "budget_health",
    "conversation_layers",
    "count_tokens",
    "get_counter",
    "group_messages",
    "load_encoding",
    "pack",
    "parse_conversation",
    "truncate_text",
]
