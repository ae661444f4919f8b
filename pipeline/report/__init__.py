"""Report: paper-style tables, significance against the baseline, figures and sweeps.

- `significance`: % change, paired t-test (Bonferroni-adjusted), mean ± std over seeds;
- `tables`: Markdown tables (absolute values, % change with `†` marks);
- `plots`: trade-off scatter, training curves, curriculum bucket probabilities, sweeps;
- `sweeps`: `dvc exp show --json` → λ / σ / bucket-count plots (`python -m
  pipeline.report.sweeps --help`);
- `build`: the report stage's body (`build_report`, `build_curriculum_figure`).
"""
