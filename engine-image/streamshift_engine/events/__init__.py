"""Event model: columnar input batches, columnar results, and their wire formats."""
