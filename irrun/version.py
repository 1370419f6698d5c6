"""irrun's version, where every module can read it."""

__version__ = "0.1.0"
