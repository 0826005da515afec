"""Column value decoders of the binlog: DECIMAL, temporal types, binary JSON, character sets, geometry,
and the marks of values read for inspection (``marked``).

Each module turns the bytes of one column value, as the server packs it into a rows event, into the
Python value sluice hands on (see ``sluice.binlog.rowplan`` for the table of types). They are the
building blocks the compiled row decoders call; none of them does I/O.
"""
