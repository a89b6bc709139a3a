from __future__ import annotations

import tierwise


def test_all_is_sorted_and_complete() -> None:
    assert tierwise.__all__ == sorted(tierwise.__all__)
    for name in tierwise.__all__:
        assert hasattr(tierwise, name), name


def test_no_private_names_exported() -> None:
    assert not [name for name in tierwise.__all__ if name.startswith("_")]
