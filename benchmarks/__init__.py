"""joinery's benchmark suite: `python -m benchmarks --list` (see benchmarks/README.md)."""
