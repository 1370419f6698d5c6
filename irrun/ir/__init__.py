"""From bytes to plain records: the IR's reader, schema check, weights, element types,
dims, attributes, and the table of ops by type and version.
"""
