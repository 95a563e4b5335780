"""Tests of the stream engine core."""
