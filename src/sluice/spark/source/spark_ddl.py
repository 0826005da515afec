"""Spark's DDL form of an Arrow schema (```op` STRING, `pos` BIGINT, ...``), the column list that a
data source's ``schema()`` and ``DataStreamReader.schema`` take: derived from the Arrow schema the
source's batches have, so that the two forms of a schema are one."""

from __future__ import annotations

import pyarrow as pa

__all__ = ["spark_ddl", "spark_type"]

# The Arrow types the source's schemas use, and Spark's name for each.
_SPARK_NAMES = {
    pa.string(): "STRING",
    pa.int64(): "BIGINT",
    pa.int32(): "INT",
    pa.bool_(): "BOOLEAN",
    pa.float64(): "DOUBLE",
    pa.timestamp("us", tz="UTC"): "TIMESTAMP",
    pa.timestamp("us"): "TIMESTAMP_NTZ",
}


def spark_type(arrow: pa.DataType) -> str:
    """Spark's SQL name of an Arrow type (a list is an ``ARRAY`` of its items' type)."""
    if pa.types.is_list(arrow):
        return f"ARRAY<{spark_type(arrow.value_type)}>"
    name = _SPARK_NAMES.get(arrow)
    if name is None:
        raise TypeError(f"the Arrow type {arrow} has no Spark type here: add it to _SPARK_NAMES")
    return name


def spark_ddl(schema: pa.Schema) -> str:
    """The columns of ``schema`` as Spark DDL, in order, every name quoted."""
    return ", ".join(f"`{field.name}` {spark_type(field.type)}" for field in schema)
