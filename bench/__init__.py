"""Benchmarks that measure Brook against a peer in the same run and report ratios."""
