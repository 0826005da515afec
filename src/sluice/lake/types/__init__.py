"""A table's mirror columns: MySQL column -> Arrow / Spark type (``columns``), the layout from the
tracked schema (``table_layout``), row images read back from JSON (``images``) or from the compiled
core's typed buffers (``typed_images``), and how each column is read column-wise (``read_plans``).
"""
