"""Words of irrun's messages that every layer writes the same way."""

from __future__ import annotations


def count(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural but for 1.

    >>> count(1, "output"), count(2, "output"), count(0, "constant layer")
    ('1 output', '2 outputs', '0 constant layers')
    """
    return f"{n} {noun}{'s' * (n != 1)}"
