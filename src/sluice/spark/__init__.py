"""sluice on Spark: the ``binlog`` data source, the session and its JVM, the snapshot, ``verify``,
the mirrors' schema changes and ``sluice run``'s pipeline.

The Delta tables themselves are written by ``sluice.lake``, below this package, which imports no
pyspark. Importing this package does not import pyspark either: modules that need Spark import it
themselves.

Each role is a subpackage (``source``, ``runtime``, ``snapshot``, ``verify``, ``ddl``, ``pipeline``)
whose ``__init__`` names its exports with ``sluice.lazy.lazy_exports``.
"""
