"""The offline assistant: a labelled, rule-based stand-in for a model, so the app runs with no key.

It is not a language model. Each call reads the conversation the engine sends, recognises the
request (:mod:`.intents`, with :mod:`.when` for dates and parts of the day and :mod:`.phrases` for
words), plans the next tool call in the list → detail order from what the turn has seen so far
(:mod:`.reading`; the steps every plan shares and the item a request names in :mod:`.planning`,
the calendar's plans in :mod:`.calendar_plans`, "what should I work on today?" in :mod:`.today`),
and answers from the tool results (:mod:`.answers`). "The second one", "it", "that task" are
resolved against what the user last saw — the last list an answer showed, in its order, and the
item the answers were last about — never a tool result no answer showed. Anything it does not
recognise gets an honest reply naming how to configure a real model.

::

    request ─► reading (RequestView: user text, now, location, steps so far, items shown)
            ─► intents.recognise ─► model.OfflineAssistant plans: tool call │ answers.render
"""

from __future__ import annotations

from tierwise.workspace.assistant.model import OFFLINE_HINT, OfflineAssistant

__all__ = ["OFFLINE_HINT", "OfflineAssistant"]
