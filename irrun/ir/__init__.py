"""From bytes to plain records: the .xml file read and parsed safely (xml_file), the
records it is read into (records, reader), the schema check, the weights, element
types, dims, attributes, and the table of ops by type and version (registry).
"""
