"""Operators over columnar streams: stateless, joins, stateful map, top-k."""
