"""Benchmarks that print figures: throughput ratios against plain loops measured in the same run."""
