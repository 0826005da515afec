"""Throwaway MariaDB and MySQL servers with the binlog on, for tests, benchmarks and the demo.

- ``install``: finds MariaDB's binaries; downloads MySQL 9.x into a private root in the cache.
- ``certs``: the CA and server certificate each sandbox serves TLS with.
- ``server``: ``Sandbox.start("mariadb" | "mysql")`` and everything a running sandbox offers.
- ``command``: ``sluice sandbox up|down|status``.
"""
