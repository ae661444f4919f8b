#!/usr/bin/env bash
# Set up a fresh machine: a virtual environment in .venv with the CPU build of torch pinned,
# then every other Python dependency at the exact version and hash of requirements.lock
# (the environment that produced the committed dvc.lock and metrics), then the project
# itself. Idempotent: rerunning is cheap and puts back any package that drifted from the lock.
#   TORCH_VERSION=...  another torch (GPU users: install your CUDA build of torch into .venv
#                      first; an installed torch is kept, whatever its build)
#   LOCK=0             no lock: the newest releases pyproject.toml's ranges allow (e.g. on a
#                      platform other than Linux x86_64 / CPython 3.11, which the lock is for)
# docs/dependencies.md, "The locked environment", says how to refresh the lock.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
# pip repeats a harmless warning per package about missing local index folders on some hosts.
quiet() { grep -v "^WARNING: Location 'file:" || true; }
# .venv is ours only as a folder made here: a symbolic link (a dangling one, or one into
# another checkout's environment, which we would change) or a folder whose Python does not
# run (copied from another machine) is refused with what to do, never deleted for you.
if [ -L .venv ]; then
  echo "Error: .venv is a symbolic link (to $(readlink .venv)), not this checkout's environment; remove the link (rm .venv) and rerun bash scripts/setup.sh" >&2
  exit 1
elif [ -e .venv ] && ! .venv/bin/python -c "" 2>/dev/null; then
  echo "Error: .venv exists but .venv/bin/python does not run (an environment from another machine or a broken one); remove it (rm -rf .venv) and rerun bash scripts/setup.sh" >&2
  exit 1
elif [ ! -e .venv ]; then
  "$PY" -m venv .venv
fi
# CPU wheel first: an unpinned torch requirement would pull several GB of CUDA packages.
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  .venv/bin/pip install --quiet "torch==${TORCH_VERSION:-2.13.0}" 2>&1 | quiet
fi
if [ "${LOCK:-1}" = 0 ]; then
  .venv/bin/pip install --quiet -e ".[dev]" 2>&1 | quiet
  exit 0
fi
# Exactly the lock: every file checked against its sha256; --no-deps because the lock lists
# every dependency (torch, installed above, is left out of it on purpose).
.venv/bin/pip install --quiet --require-hashes --no-deps -r requirements.lock 2>&1 | quiet
# The project itself, editable, with the locked setuptools (no download, no resolution).
.venv/bin/pip install --quiet --no-deps --no-build-isolation -e . 2>&1 | quiet
.venv/bin/pip check >/dev/null || { .venv/bin/pip check; exit 1; }
