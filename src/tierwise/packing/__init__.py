"""Packing: context layers in, a budgeted, checksummed pack out."""

from tierwise.packing.conversation import Conversation, conversation_layers, parse_conversation
from tierwise.packing.groups import MessageGroups, group_messages
from tierwise.packing.layers import DEFAULT_PRIORITY, KIND_ORDER, ContextLayer, truncate_text
from tierwise.packing.packer import POLICY, Packer, canonical_json, pack
from tierwise.packing.report import LayerReport, Pack, PackReport

__all__ = [
    "DEFAULT_PRIORITY",
    "KIND_ORDER",
    "POLICY",
    "ContextLayer",
    "Conversation",
    "LayerReport",
    "MessageGroups",
    "Pack",
    "PackReport",
    "Packer",
    "canonical_json",
    "conversation_layers",
    "group_messages",
    "pack",
    "parse_conversation",
    "truncate_text",
]
