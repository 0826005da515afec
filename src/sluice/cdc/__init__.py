"""Change capture: transactions, positions, checkpoints and schema history."""
