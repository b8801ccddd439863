"""Benchmarks: figures and ratios, printed; never timed unit tests."""
