"""Check that `dvc plots show` draws every chart with no network, in headless Chromium.

`python -m pipeline.report.plots_check [--screenshot PNG]` runs `dvc plots show` into a
temporary folder, opens the page in Chromium with every host unresolvable (so nothing can
load from a CDN) and counts, for each Vega chart, the coloured pixels its canvas holds: a
chart is drawn when its marks (lines, points: Vega's category colours) are on the canvas,
not just its frame. It prints one line per chart and `N of M charts drawn`, and exits 1 when
a chart is blank. Needs Debian's `chromium` (`apt-get install chromium`); the test
`tests/unit/test_plots_offline.py` skips without it.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from pipeline.errors import SetupError

log = logging.getLogger(__name__)

MIN_PIXELS = 20  # coloured pixels that make a chart "drawn" (a line or a few points)
# Headless flags that work on a machine without network or display (no sandbox as root).
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND",  # no host resolves: a CDN script cannot load
)
_PROBE = """
<script>
window.addEventListener("load", function () {
  setTimeout(function () {
    var out = [];
    IDS.forEach(function (id) {
      var div = document.getElementById(id);
      var colored = 0, canvas = div && div.querySelector("canvas");
      if (canvas && canvas.width > 0) {
        var px = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
        for (var i = 0; i < px.length; i += 4) {
          var r = px[i], g = px[i + 1], b = px[i + 2];
          if (px[i + 3] > 0 && Math.max(r, g, b) - Math.min(r, g, b) > 60) colored++;
        }
      }
      out.push({id: id, canvas: !!canvas, colored: colored});
    });
    var pre = document.createElement("pre");
    pre.id = "plots-check";
    pre.textContent = JSON.stringify(out);
    document.body.appendChild(pre);
  }, 5000);
});
</script>
"""


def chromium() -> str | None:
    """The Chromium executable, or None."""
    return next((p for n in ("chromium", "chromium-browser") if (p := shutil.which(n))), None)


def render_plots(out_dir: Path, repo: Path = Path()) -> Path:
    """`dvc plots show -o out_dir` in `repo` (its `.dvc/config` template); the page."""
    subprocess.run(
        [sys.executable, "-m", "dvc", "plots", "show", "-o", str(out_dir)],
        cwd=repo, check=True, capture_output=True,
    )  # fmt: skip
    return out_dir / "index.html"


def _run_chromium(browser: str, args: Sequence[str], profile: Path) -> str:
    proc = subprocess.run(
        [browser, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        raise SetupError(f"chromium failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return proc.stdout


def charts(page: Path, browser: str, screenshot: Path | None = None) -> list[dict]:
    """Per chart of the page: `{id, canvas, colored}` after Chromium has drawn it offline."""
    html = page.read_text(encoding="utf-8")
    ids = re.findall(r"vegaEmbed\('#([^']+)'", html)  # every Vega chart DVC wrote
    cut = html.rfind("</body>")
    probe = _PROBE.replace("IDS", json.dumps(ids))
    probed = page.with_name("checked.html")
    probed.write_text(html[:cut] + probe + html[cut:], encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="chromium-") as profile:
        dom = _run_chromium(
            browser, ["--virtual-time-budget=60000", "--dump-dom", probed.as_uri()], Path(profile)
        )
        if screenshot is not None:
            _run_chromium(
                browser,
                ["--virtual-time-budget=30000", f"--screenshot={screenshot}",
                 "--window-size=1400,2400", page.as_uri()],
                Path(profile),
            )  # fmt: skip
    m = re.search(r'<pre id="plots-check">(.*?)</pre>', dom, re.DOTALL)
    if not m:
        raise SetupError(f"{page}: the page did not finish (no probe output)")
    result: list[dict] = json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    return result


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--repo", type=Path, default=Path())
    ap.add_argument("--screenshot", type=Path, help="also write a PNG of the page's top")
    ns = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    browser = chromium()
    if browser is None:
        raise SystemExit("chromium not found: apt-get install chromium")
    with tempfile.TemporaryDirectory(prefix="plots-") as tmp:
        page = render_plots(Path(tmp) / "plots", ns.repo)
        found = charts(page, browser, ns.screenshot)
    drawn = [c for c in found if c["colored"] >= MIN_PIXELS]
    for c in found:
        log.info("%-60s %s (%d coloured pixels)", c["id"],
                 "drawn" if c in drawn else "BLANK", c["colored"])  # fmt: skip
    log.info("%d of %d charts drawn", len(drawn), len(found))
    raise SystemExit(0 if found and len(drawn) == len(found) else 1)


if __name__ == "__main__":
    main()
