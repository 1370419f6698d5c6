"""Placeholder module, filled in with its ops next."""
