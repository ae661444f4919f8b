#!/usr/bin/env bash
# Refresh the offline `dvc plots show` template (pipeline/resources/vega/): fetch the npm
# packages of Vega, Vega-Lite and Vega-Embed (BSD-3-Clause), inline their UMD builds into
# plots.html and record versions, npm integrity and sha256 in manifest.json. Needs npm and
# the npm registry; the pipeline itself never does. Versions: the majors dvc-render's own
# page loads (vega 5, vega-lite 5, vega-embed 6); change them here, rerun, commit.
set -euo pipefail
cd "$(dirname "$0")/.."
VEGA=${VEGA:-5.33.1} VEGA_LITE=${VEGA_LITE:-5.23.0} VEGA_EMBED=${VEGA_EMBED:-6.29.0}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
( cd "$tmp" && npm pack --json "vega@$VEGA" "vega-lite@$VEGA_LITE" "vega-embed@$VEGA_EMBED" > pack.json )
.venv/bin/python - "$tmp" <<'PY'
import json, pathlib, sys, tarfile
tmp = pathlib.Path(sys.argv[1])
integrity = {}
for entry in json.loads((tmp / "pack.json").read_text()):
    integrity[entry["name"]] = entry["integrity"]
    with tarfile.open(tmp / entry["filename"]) as tar:
        tar.extractall(tmp / entry["name"], filter="data")
(tmp / "integrity.json").write_text(json.dumps(integrity))
PY
# vega's npm package ships no LICENSE: LICENSE.vega is the vega repository's (same terms).
for name in vega-lite vega-embed; do
  cp "$tmp/$name/package/LICENSE" "pipeline/resources/vega/LICENSE.$name"
done
.venv/bin/python -m pipeline.report.vega_template "$tmp" --integrity "$tmp/integrity.json"
