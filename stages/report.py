"""Stage `report`: summary tables (absolute and % change vs the baseline with significance),
the comparison CSV, the trade-off plot data and the report figures."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence

from pipeline import io, paths, schemas
from pipeline.data import get_source
from pipeline.deps import unstaged_methods
from pipeline.errors import InputError
from pipeline.params import FIRST_STAGE, REFERENCE_ROWS
from pipeline.report.build import build_report
from pipeline.report.family_figures import method_families
from pipeline.report.per_query import seed_folds
from pipeline.report.verdict_rule import VerdictRule
from stages.common import run_stage, setup

log = logging.getLogger("stages.report")


def main(argv: Sequence[str] | None = None) -> None:
    params = setup(__doc__ or "", argv).params
    methods = list(params.methods)  # from params, not a glob: removed methods leave stale files
    if missing := unstaged_methods([*methods, *params.post]):
        raise InputError(f"methods {missing} of params.yaml have no stages in dvc.yaml: run "
                         "`python -m pipeline.deps --write`, then `dvc repro`")  # fmt: skip
    post = {e: p.settings() for e, p in params.post.items()}  # inference-time entries
    written = build_report(
        [*REFERENCE_ROWS, *methods, *post], eval_dir=paths.EVAL, out_dir=paths.METRICS,
        cutoffs=params.evaluate.cutoffs, baseline=methods[0], reference=REFERENCE_ROWS,
        info={"dataset": params.dataset.name, "model": f"{params.model.name} ({params.model.arch})",
              "evaluation": _evaluation(params.dataset.folds)},
        plots_dir=paths.REPORT_PLOTS, train_dir=paths.LIVE, transfer_data=paths.TRANSFER,
        correction=params.report.correction, bootstrap_samples=params.report.bootstrap_samples,
        bootstrap_seed=params.report.bootstrap_seed,
        folds=seed_folds(io.read_table(paths.FOLDS, schemas.FOLDS), params.train.seeds),
        controls=params.controls, saturated=get_source(params.dataset.name).saturated,
        families=method_families({m: e.settings() for m, e in params.methods.items()}), post=post,
        rule=VerdictRule(params.report.primary, params.report.balance_margin),
    )  # fmt: skip
    log.info("report: %d methods (baseline %s), %d files", len(methods), methods[0], len(written))


def _evaluation(folds: int) -> str:
    """ "5-fold cross-validation, 117 queries": how the rows were evaluated."""
    n = json.loads((paths.evals(FIRST_STAGE) / "metrics.json").read_text()).get("n_queries", 0)
    split = f"{folds}-fold cross-validation" if folds > 1 else "one train/test split"
    return f"{split}, {int(n)} queries"


if __name__ == "__main__":
    run_stage(main)
