"""sluice: change data capture from the MySQL and MariaDB binary log.

Reads the binlog the way a replica does, decodes every event and value exactly and delivers the
committed row changes. Packages: ``wire`` (client protocol, sans-I/O), ``binlog`` (event and value
decoding, sans-I/O), ``io`` (sockets and files), ``cdc`` (transactions, positions, schema),
``sandbox`` (throwaway test servers) and the ``sluice`` command line in ``cli``.
"""

__version__ = "0.1.0"
