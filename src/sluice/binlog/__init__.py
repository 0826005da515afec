"""Binlog events and row values decoded from bytes. No I/O here."""
