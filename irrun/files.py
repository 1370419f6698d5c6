"""What writing a file whole or not at all needs, for every layer that writes one."""

from __future__ import annotations

import os
from pathlib import Path


def mode_for(path: Path) -> int:
    """The mode of the file being replaced, else what the umask leaves of 0666 (a
    temporary file is made private, 0600, and is given this before it takes its place)."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
