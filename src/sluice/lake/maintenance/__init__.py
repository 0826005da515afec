"""Upkeep of the lake's Delta tables: compaction, checkpoints, log cleanup and VACUUM (``steps``),
and Delta's change feed on the mirrors (``change_feed``).
"""
