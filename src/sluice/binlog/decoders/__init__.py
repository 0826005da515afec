"""Event decoders, one module per event family; ``registry.DECODERS`` maps type codes to them.

This package imports nothing on purpose, so that helpers such as ``_reader`` can be used from
``sluice.binlog.gtid`` without pulling in every decoder.
"""
