"""Benchmarks: `make bench` (= `python -m benchmarks`) runs each one and writes results/latest.json and latest.md."""
