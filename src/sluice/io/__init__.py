"""The I/O shell under the decoders: server connections and their socket, the replication stream,
binlog files, and the state and output files of a capture."""
