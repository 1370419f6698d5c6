"""Editing IR: documents made from a loaded model, changed, and written with
:mod:`irrun.ir.writer` (extract, fold, reshape, precision, cleanup, reduce).

Each edit takes a loaded :class:`~irrun.core.model.Model` (for its inferred shapes,
types and constant values) and returns a new :class:`~irrun.ir.records.IRDocument`;
the model and the records it was read from are left as they were.
"""
