#!/usr/bin/env bash
# Set up a fresh machine: a virtual environment in .venv with the CPU build of torch pinned,
# then the project with its dev extras. Idempotent: rerunning is cheap.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
# pip repeats a harmless warning per package about missing local index folders on some hosts.
quiet() { grep -v "^WARNING: Location 'file:" || true; }
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
# CPU wheel first: an unpinned torch requirement would pull several GB of CUDA packages.
# GPU users: install your CUDA torch build into .venv before running this script.
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  .venv/bin/pip install --quiet "torch==${TORCH_VERSION:-2.13.0}" 2>&1 | quiet
fi
.venv/bin/pip install --quiet -e ".[dev]" 2>&1 | quiet
