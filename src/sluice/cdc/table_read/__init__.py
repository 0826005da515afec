"""The initial snapshot: a table's rows read in key chunks between binlog watermarks (``chunks``,
``reader``), reconciled with the binlog changes between them (``reconcile``), tables without a
usable key in one consistent scan with its binlog position (``consistent``). The pipeline keeps the
plan and the finished chunks a killed snapshot resumes from (``sluice.spark.snapshot.driver``)."""
