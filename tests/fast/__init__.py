"""Tests of irrun.fast: each fast kernel against its reference kernel."""
