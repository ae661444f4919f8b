"""`dvc plots show` draws every chart with no network: the HTML template inlines Vega,
Vega-Lite and Vega-Embed (pipeline/report/vega_template.py), and headless Chromium, with no
host resolvable, finds each chart's marks on its canvas (pipeline/report/plots_check.py)."""

from __future__ import annotations

import configparser
import json
from pathlib import Path

import pytest

from pipeline.report import plots_check, vega_template

ROOT = Path(__file__).resolve().parents[2]


def test_template_inlines_the_recorded_builds() -> None:
    template = vega_template.TEMPLATE.read_text(encoding="utf-8")
    manifest = json.loads(vega_template.MANIFEST.read_text(encoding="utf-8"))
    builds = vega_template.inlined(template)
    assert list(builds) == [name for name, _ in vega_template.BUILDS] == list(manifest)
    for name, text in builds.items():
        assert vega_template.sha256(text) == manifest[name]["sha256"], name
        assert manifest[name]["license"] == "BSD-3-Clause"
        assert (vega_template.RESOURCES / f"LICENSE.{name}").is_file()
    # no CDN: dvc-render adds its <script src=cdn> tags only where `{scripts}` stands
    assert "{scripts}" not in template and "{plot_divs}" in template
    assert "<script src=" not in template
    assert vega_template.render(list(builds.items())) == template
    config = configparser.ConfigParser()
    config.read(ROOT / ".dvc" / "config")
    configured = (ROOT / ".dvc" / config["plots"]["html_template"]).resolve()
    assert configured == vega_template.TEMPLATE


def test_a_build_that_would_break_the_page_is_refused() -> None:
    with pytest.raises(ValueError, match=r"x: the build contains \['</script'\]"):
        vega_template.render([("x", "a = '</script>'")])


@pytest.mark.slow
def test_every_chart_is_drawn_offline(tmp_path: Path) -> None:
    """On the committed default's plot files: every Vega chart of `dvc plots show` has its
    marks drawn with no network; the same page with dvc-render's CDN scripts draws none."""
    browser = plots_check.chromium()
    if browser is None:
        pytest.skip("chromium is not installed (apt-get install chromium; .ci/run does)")
    page = plots_check.render_plots(tmp_path / "plots", ROOT)
    found = plots_check.charts(page, browser)
    assert len(found) >= 40  # 2 trade-off plots + 22 ordering + 22 training curves
    blank = [c["id"] for c in found if c["colored"] < plots_check.MIN_PIXELS]
    assert blank == []
    # control: DVC's own page loads the libraries from a CDN, which cannot resolve here
    from dvc_render.vega import VegaRenderer

    html = page.read_text(encoding="utf-8")
    inlined = vega_template.inlined(html)
    cdn = html
    for i, (name, text) in enumerate(inlined.items()):
        block = f'<script data-package="{name}">\n{text}\n</script>'
        cdn = cdn.replace(block, VegaRenderer.SCRIPTS if i == 0 else "")
    assert len(inlined) == 3 and "cdn.jsdelivr.net" in cdn and not vega_template.inlined(cdn)
    online = tmp_path / "cdn" / "index.html"
    online.parent.mkdir()
    online.write_text(cdn, encoding="utf-8")
    assert all(c["colored"] == 0 for c in plots_check.charts(online, browser))
