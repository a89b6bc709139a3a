"""The reference assistant's workspace: projects, tasks, notes, brain dumps and calendar.

Its tables live in the store's database (:mod:`.models`, migration ``0002``); the packer knows
nothing of them, and they know nothing of budgets: they meet through tools and context sources.

::

    queries / repository (Workspace, every call by user) ──► views (abbreviated · full records)
        │                                                        │
    calendar/ (Calendar, LocalCalendar, recurrence,             tools + calendar_tools (seed 001's 12)
               free slots, ICS)                                  context (system prompt, location layers)
        │                                                        │
    sample (deterministic workspace)          app: assistant_engine · assistant_provider · ensure_sample
                                              assistant/ (the offline, rule-based stand-in model)
                                              recaps (what a result is re-sent as after its turn)
"""
