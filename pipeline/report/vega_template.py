"""An HTML template for `dvc plots show` that draws every chart with no network.

DVC's default page (dvc-render's `VegaRenderer.SCRIPTS`) loads Vega, Vega-Lite and Vega-Embed
from a CDN, so offline every chart is empty. `.dvc/config` points `plots.html_template` at
`pipeline/resources/vega/plots.html` instead: the same page with the three libraries' UMD
builds inlined. A template without the `{scripts}` placeholder gets no CDN `<script>` tags
(dvc-render fills only the placeholders present), and inlining (not `<script src=...>`) keeps
the page working wherever `dvc plots show -o DIR` writes it. A script at the end of the page
keeps the report's charts first and folds the hundreds of per-model DVCLive curves and the
per-method training orders into collapsed sections (`--rerender` rewrites the page around
the builds it already inlines, after a change of `_PAGE`).

The builds come from the npm packages (BSD-3-Clause, University of Washington Interactive
Data Lab); `manifest.json` beside the template records each package's version, npm integrity
and the sha256 of the build that is inlined, and `tests/unit/test_vega_template.py` checks the
template against it. Refresh: `bash scripts/vendor_vega.sh` (docs/dependencies.md).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import re
from collections.abc import Sequence
from pathlib import Path

from pipeline import io
from pipeline.errors import InputError

log = logging.getLogger(__name__)

RESOURCES = Path(__file__).resolve().parents[1] / "resources" / "vega"
TEMPLATE = RESOURCES / "plots.html"
MANIFEST = RESOURCES / "manifest.json"
# (npm package, its UMD build), in load order: vega-lite and vega-embed need vega's global.
BUILDS = (
    ("vega", "build/vega.min.js"),
    ("vega-lite", "build/vega-lite.min.js"),
    ("vega-embed", "build/vega-embed.min.js"),
)
_PLACEHOLDERS = ("{scripts}", "{plot_divs}", "{refresh_tag}")
_SCRIPT = re.compile(r'<script data-package="([^"]+)">\n(.*?)\n</script>', re.DOTALL)

_PAGE = """<!DOCTYPE html>
<html>
<head>
    {refresh_tag}
    <meta charset="utf-8">
    <title>DVC Plot</title>
    <!-- Vega, Vega-Lite and Vega-Embed inlined (pipeline/resources/vega/manifest.json,
         BSD-3-Clause): `dvc plots show` draws every chart offline. -->
{inlined}
    <style>
        table {
            border-spacing: 15px;
        }
        details.plot-group { margin: 1em 0; }
        details.plot-group > summary { font: bold 15px sans-serif; cursor: pointer; }
    </style>
</head>
<body>
    {plot_divs}
    <script>
    /* The report's charts first; the per-model training curves (DVCLive, one chart per
       file) and the per-method training orders folded into sections below them. */
    (function () {
      var groups = [
        ["dvclive_", "Training curves of every fold model (DVCLive)"],
        ["plots_order_", "Training order of every method (Ψ⁺ by tenth of training)"]
      ];
      var charts = Array.prototype.filter.call(document.body.children, function (e) {
        return e.tagName === "DIV" && e.id;
      });
      groups.forEach(function (group) {
        var members = charts.filter(function (d) { return d.id.indexOf(group[0]) === 0; });
        if (!members.length) return;
        var box = document.createElement("details");
        box.className = "plot-group";
        var title = document.createElement("summary");
        title.textContent = group[1] + ": " + members.length + " charts";
        box.appendChild(title);
        members.forEach(function (d) { box.appendChild(d); });
        document.body.appendChild(box);
      });
    })();
    </script>
</body>
</html>
"""


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def render(builds: Sequence[tuple[str, str]]) -> str:
    """The page with each `(package, build text)` inlined in a `<script>` element."""
    blocks = []
    for name, text in builds:
        bad = [p for p in (*_PLACEHOLDERS, "</script") if p in text]
        if bad:
            raise InputError(f"{name}: the build contains {bad}; it cannot be inlined")
        blocks.append(f'<script data-package="{name}">\n{text.strip()}\n</script>')
    return _PAGE.replace("{inlined}", "\n".join(blocks))


def inlined(template: str) -> dict[str, str]:
    """package → the build text inlined in `template`."""
    return {name: text for name, text in _SCRIPT.findall(template)}


def build(packages: Path) -> tuple[str, dict[str, dict[str, str]]]:
    """Template and manifest from unpacked npm packages (`<packages>/<name>/package/...`)."""
    builds, manifest = [], {}
    for name, rel in BUILDS:
        root = packages / name / "package"
        meta = json.loads((root / "package.json").read_text(encoding="utf-8"))
        text = (root / rel).read_text(encoding="utf-8").strip()
        builds.append((name, text))
        manifest[name] = {
            "version": str(meta["version"]),
            "license": str(meta.get("license", "")),
            "file": rel,
            "sha256": sha256(text),
        }
    return render(builds), manifest


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("packages", type=Path, nargs="?",
                    help="folder with <name>/package/ unpacked from npm")  # fmt: skip
    ap.add_argument("--integrity", type=Path, help="JSON {name: npm integrity} to record")
    ap.add_argument("--rerender", action="store_true",
                    help="rewrite the page around the builds it already inlines (no npm)")
    ns = ap.parse_args(argv)
    if ns.rerender:
        builds = inlined(TEMPLATE.read_text(encoding="utf-8"))
        io.write_text(render([(name, builds[name]) for name, _ in BUILDS]), TEMPLATE)
        log.info("%s: page rewritten around the inlined builds", TEMPLATE)
        return
    if ns.packages is None:
        ap.error("give the npm packages folder, or --rerender")
    template, manifest = build(ns.packages)
    if ns.integrity:
        for name, value in json.loads(ns.integrity.read_text(encoding="utf-8")).items():
            manifest[name]["integrity"] = value
    io.write_text(template, TEMPLATE)
    io.write_json(manifest, MANIFEST)
    for name, entry in manifest.items():
        log.info("%s %s: %s", name, entry["version"], entry["sha256"])


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    main()
