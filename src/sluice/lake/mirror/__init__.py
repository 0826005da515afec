"""One table's mirror: what a batch hands it (``batch``), the fold per primary key (``fold``), the
MERGE source built column-wise (``merge_source``, ``typed_changes``, ``versioned``), the MERGE
(``merge``) and the changes held pending until a MERGE pays (``pending``).
"""
