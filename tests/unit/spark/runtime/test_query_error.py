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


def test_a_carried_server_error_comes_back_whole():
    """A ServerError from the source's driver worker (latestOffset) keeps its type, errno and hint."""
    from sluice.errors import BinlogUnavailableError, carry, server_error
    from sluice.spark.source.failures import SourceFailure, typed_failures

    @typed_failures
    def latest_offset():
        raise server_error(1236, "HY000", "Could not find first log file name in binary log index file")

    with pytest.raises(SourceFailure) as raised:
        latest_offset()
    line = str(raised.value)
    assert "\n" not in line and line == carry(server_error(1236, "HY000",
                                               "Could not find first log file name in binary log index file"))
    text = ("[PYTHON_STREAMING_DATA_SOURCE_RUNTIME_ERROR] Failed when Python streaming data source perform "
            "latestOffset: Traceback (most recent call last):\n  File \"x.py\", line 3, in call\n"
            f"sluice.spark.source.failures.SourceFailure: {line}\n")
    err = query_error(Exception(text))
    assert type(err) is BinlogUnavailableError and err.errno == 1236 and err.sqlstate == "HY000"
    assert str(err).startswith("server error 1236 (HY000): Could not find first log file name")
    assert "SHOW BINARY LOGS" in err.hint and "Traceback" not in str(err)


def test_a_generator_task_carries_its_error_and_other_errors_pass():
    from sluice.spark.source.failures import SourceFailure, typed_failures

    @typed_failures
    def read():
        yield 1
        raise SchemaError("no schema for shop.items at b.1:9")

    with pytest.raises(SourceFailure):
        list(read())
    assert type(query_error(Exception(str(_raised(read))))) is SchemaError

    @typed_failures
    def bug():
        raise KeyError("x")

    with pytest.raises(KeyError):
        bug()


def _raised(gen_fn):
    try:
        list(gen_fn())
    except Exception as exc:
        return exc
    raise AssertionError("no error")


def test_a_full_disk_names_the_path_and_says_nothing_was_lost():
    import errno

    from sluice.errors import StorageFullError
    from sluice.spark.source.failures import typed_failures

    @typed_failures
    def stage():
        raise OSError(errno.ENOSPC, "No space left on device", "/lake/_sluice/changes/part-1.parquet")

    err = query_error(Exception(str(_raised(stage))))
    assert type(err) is StorageFullError and err.path == "/lake/_sluice/changes/part-1.parquet"
    assert "disk is full" in str(err) and "/lake/_sluice/changes/part-1.parquet" in str(err)
    assert "nothing was lost" in str(err) and "next run goes on exactly" in str(err)
    # delta-rs and Spark say it in their text only: the lake is named then.
    rust = Exception("Generic error: Failed to write /x: No space left on device (os error 28)")
    err = query_error(rust, where="/lake")
    assert type(err) is StorageFullError and err.path == "/lake"
    assert query_error(Exception("java.io.IOException: No space left on device"), where="/l").path == "/l"
    assert type(query_error(Exception("os error 2"), where="/l")) is SluiceError


def test_an_unknown_source_failure_reads_without_the_traceback_header():
    text = ("[PYTHON_STREAMING_DATA_SOURCE_RUNTIME_ERROR] Failed when Python streaming data source perform "
            "latestOffset: Traceback (most recent call last):\n  File \"x.py\"\nKeyError: 'x'\n")
    err = query_error(Exception(text))
    assert "Traceback" not in str(err) and "perform latestOffset" in str(err)
