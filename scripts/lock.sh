#!/usr/bin/env bash
# Refresh requirements.lock: every Python dependency of the project and its dev extras at
# an exact version, with the sha256 of every PyPI file of that version, for CPython 3.11 on
# Linux x86_64 (what scripts/setup.sh installs; docs/dependencies.md, "The locked
# environment"). Resolved by uv (Astral, MIT/Apache-2.0) against PyPI, with torch held at
# the CPU build scripts/setup.sh installs (TORCH, default 2.13.0+cpu, a wheel in FIND_LINKS:
# elsewhere, point FIND_LINKS at a folder holding PyTorch's CPU wheel). torch itself is left
# out of the lock, so GPU users keep their CUDA build, while torch's own dependencies are
# those of the CPU wheel (no CUDA packages).
# After a refresh: bash scripts/setup.sh, rerun the tests and the default pipeline, commit.
set -euo pipefail
cd "$(dirname "$0")/.."
TORCH=${TORCH:-2.13.0+cpu}
FIND_LINKS=${FIND_LINKS:-/opt/wheels}
UV=${UV:-.venv/bin/uv}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "torch==$TORCH" > "$tmp/torch.txt"
links=()
[ -d "$FIND_LINKS" ] && links=(--find-links "$FIND_LINKS")
"$UV" pip compile pyproject.toml --extra dev --generate-hashes \
  --python-version 3.11 --python-platform x86_64-manylinux_2_28 \
  "${links[@]}" --constraint "$tmp/torch.txt" --no-emit-package torch --no-emit-find-links \
  --custom-compile-command "bash scripts/lock.sh" --output-file requirements.lock
