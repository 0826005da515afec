"""Throwaway MariaDB and MySQL servers with the binlog on, for tests, benchmarks and the demo."""
