"""Report: paper-style tables, significance against the baseline, figures and sweeps.

- `significance`: % change, paired t-test (Bonferroni- or Holm-adjusted), bootstrap CI of
  each difference, mean ± std over seeds (the statistics are in `pipeline.stats`);
- `tables`: Markdown tables (absolute values, % change [CI] with `†` marks);
- `ranx_export`: the comparison as a ranx `Report.to_dict()` (`comparison_ranx.json`);
- `plots`: trade-off scatter, training curves, curriculum bucket probabilities, sweeps;
- `sweeps`: `dvc exp show --json` → λ / σ / bucket-count plots (`python -m
  pipeline.report.sweeps --help`);
- `build`: the report stage's body (`build_report`, `build_curriculum_figure`).
"""
