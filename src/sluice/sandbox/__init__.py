"""Throwaway MariaDB and MySQL servers with the binlog on, for tests, benchmarks and the demo.

- ``install``: finds the system's MariaDB binaries; downloads MySQL 9.x and MariaDB 11.8 into
  private roots in the cache (``private_root``: unpacking and running them through the root's own
  loader; ``debian``: Debian's package index and the shared-library closure of the packages).
- ``certs``: the CA and server certificate each sandbox serves TLS with.
- ``server``: ``Sandbox.start("mariadb" | "mysql" | "mariadb11")`` and everything a running sandbox offers;
  ``argv`` (each distribution's command lines), ``datadir`` (initialised data directories that new
  sandboxes copy) and ``process`` (ports, process groups, stale work directories) beside it.
- ``replication``: a sandbox made the replica of another, waited on, and promoted.
- ``s3``: an S3 API server (``moto_server``); ``spark_cluster``: a Spark standalone cluster.
- ``command``: ``sluice sandbox up|replica|promote|down|status`` (``start_command``: the actions that
  start a server or change its role; ``state``: the state files of the servers it started).
"""
