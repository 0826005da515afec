"""``python -m sluice.spark.runtime.make_archive``: make the Spark driver's class archive now.

``./run setup`` runs it so that no test or demo pays for making the archive
(``sluice.spark.runtime.jvm_archive``): a short ``local[1]`` run whose driver JVM writes the archive
at its exit. Nothing is done when the archive is there or another run is making it.
"""

from __future__ import annotations

import sys

from sluice.spark.runtime.jvm_archive import driver_options
from sluice.spark.runtime.session import spark_session

__all__ = ["main"]


def main() -> int:
    """Make the archive now, with a short Spark run, unless it is there."""
    options = driver_options()
    if "ArchiveClassesAtExit" not in options:
        print("sluice: the Spark driver's class archive is there" if options else "sluice: no class archive "
              "for the Spark driver (turned off, no java, or another run is making it)", file=sys.stderr)
        return 0
    spark = spark_session("local[1]", app_name="sluice-class-archive")
    spark.range(0, 1000, 1, 1).selectExpr("sum(id)").collect()
    spark.range(0, 2, 1, 1).mapInArrow(lambda batches: batches, "id long").collect()
    return 0


if __name__ == "__main__":
    sys.exit(main())
