"""The only modules that touch sockets and files: connections, the replication stream, binlog files."""
