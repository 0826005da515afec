"""Throwaway MariaDB and MySQL servers with the binlog on, for tests, benchmarks and the demo.

- ``install``: finds MariaDB's binaries; downloads MySQL 9.x into a private root in the cache
  (``debian``: Debian's package index and the shared-library closure of the MySQL packages).
- ``certs``: the CA and server certificate each sandbox serves TLS with.
- ``server``: ``Sandbox.start("mariadb" | "mysql")`` and everything a running sandbox offers;
  ``argv`` (each distribution's command lines), ``datadir`` (initialised data directories that new
  sandboxes copy) and ``process`` (ports, process groups, stale work directories) beside it.
- ``command``: ``sluice sandbox up|down|status``.
"""
