"""The commands: one module each, registering its own sub-parser (irrun.cli
assembles them), and what they share (common).
"""
