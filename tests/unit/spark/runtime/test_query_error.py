"""A failed Spark query surfaces as the sluice error it carries, never as a bare RuntimeError."""

import pytest

from sluice.errors import DataLossError, SchemaError, SluiceError
from sluice.spark.runtime.query_error import query_error

pytestmark = pytest.mark.unit


def test_the_executor_error_keeps_its_type():
    text = ("[STREAM_FAILED] Query terminated with exception: An exception was thrown from the Python worker.\n"
            "Traceback (most recent call last):\n  File ...\n"
            "sluice.errors.SchemaError: the schema tracked for shop.items does not match the binlog at b.1:9\n")
    err = query_error(Exception(text))
    assert type(err) is SchemaError and str(err).startswith("the schema tracked for shop.items")
    assert isinstance(query_error(Exception("DataLossError: gone")), DataLossError)


def test_an_unknown_failure_is_a_sluice_error_naming_spark():
    err = query_error(Exception("java.lang.OutOfMemoryError: heap\n at x"))
    assert type(err) is SluiceError and "Spark query failed" in str(err) and "OutOfMemoryError" in str(err)
