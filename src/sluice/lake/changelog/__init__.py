"""The change log ``LAKE/_sluice/changes``: its schema and the stream position a commit records
(``schema``), its rows built from or read back as row changes (``rows``), its own order ``seq``
(``sequence``) and a batch's commit to it (``commit``).
"""
