"""State stores split by partition, and the snapshot byte format."""
