"""Loading a model in either mode: its fast plan, or its reference kernels only.

Tests that check values against OpenVINO run both (``MODES``): the reference kernels
define irrun's values, and the default plan must give them.
"""

from __future__ import annotations

import irrun

MODES = ["fast", "reference"]


def load(path, mode: str = "fast", **kwargs) -> irrun.Model:
    """``irrun.load(path)``, running only reference kernels when ``mode`` is "reference"."""
    return irrun.load(path, reference=mode == "reference", **kwargs)
