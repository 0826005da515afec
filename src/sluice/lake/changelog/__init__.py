"""The change log ``LAKE/_sluice/changes``: its schema and the stream position a commit records
(``schema``), and its rows built from or read back as row changes (``rows``).
"""
