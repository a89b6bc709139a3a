"""The reference assistant's workspace: projects, tasks, notes, brain dumps and calendar.

Its tables live in the store's database (:mod:`tierwise.workspace.models`, migration ``0002``); the
packer knows nothing of them, and they know nothing of budgets: they meet through tools (list →
detail, seed 001) and location-context sources.
"""
