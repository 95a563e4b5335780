"""Window assigners and the windowed aggregation operators (time, tuple-based, session)."""
