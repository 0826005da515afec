"""sluice on Spark and Delta Lake: typed Arrow conversion, the Delta writer, the binlog data source.

``sluice.spark.lake.columns`` maps MySQL columns to Arrow / Spark types and converts decoded values;
``sluice.spark.lake.sink`` merges row changes into a Delta mirror and appends them to the change
log, exactly once. Importing this package does not import pyspark: modules that need Spark import
it themselves, so the Delta writer also runs in a plain Python process.
"""

from __future__ import annotations
