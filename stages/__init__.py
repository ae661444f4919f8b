"""Thin DVC stage entry points: `python -m stages.<name>` (argparse → params → library → write)."""
