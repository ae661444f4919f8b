#!/usr/bin/env bash
# The whole test suite (lint, types, tests). Sets up .venv first if it is missing.
# pytest runs in 2 worker processes (pytest-xdist, --dist worksteal: each worker reproduces the
# tiny profile once for its own tests) and lists the 30 slowest tests at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
.venv/bin/python -m ruff check .
.venv/bin/python -m mypy pipeline stages benchmarks
.venv/bin/python -m pytest -q -n 2 --dist worksteal --durations=30
