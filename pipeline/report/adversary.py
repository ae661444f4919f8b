"""Does AdvBERT's adversary learn? Its accuracy against the majority class over training.

The adversary term (``pipeline/train/adversary.py``) logs, every ``train.log_every`` steps
of every (seed, fold) model, the head's accuracy on the batch's documents before the step's
update (``adv_acc``: an online, held-out-before-use accuracy), the batch's majority-label
share (``adv_majority``) and its share of label 1 (``adv_label_share``), as DVCLive files
``dvclive/<method>/plots/metrics/[seed-<n>/]fold-<k>/<name>.tsv``. An adversary that has
learnt to read the protected label beats the majority class; one that predicts the majority
class only matches it, and then the gradient reversal has nothing to remove.

``adversary_table`` summarises the second half of each model's training (logged steps past
half its last step): mean accuracy, mean per-batch majority share, the best constant guess
over the period (``max(p, 1 − p)``, ``p`` the mean label share; null where it was not
logged), and accuracy − majority. Read by the report (``metrics/adversary.csv``) and
docs/decisions.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

ACC, MAJORITY, SHARE = "adv_acc", "adv_majority", "adv_label_share"
COLUMNS = ("method", "model", "windows", "accuracy", "majority", "constant",
           "acc_minus_majority")  # fmt: skip


def _series(run: Path, name: str) -> pl.DataFrame | None:
    path = run / f"{name}.tsv"
    if not path.is_file():
        return None
    return pl.read_csv(path, separator="\t").select(pl.col("step").cast(pl.Int64),
                                                    pl.col(name).cast(pl.Float64))  # fmt: skip


def model_summary(run: Path) -> dict[str, float | int | None] | None:
    """The second-half summary of one model's folder of DVCLive series (None without
    ``adv_acc``)."""
    acc, majority = _series(run, ACC), _series(run, MAJORITY)
    if acc is None or majority is None or acc.height == 0:
        return None
    share = _series(run, SHARE)
    rows = acc.join(majority, on="step")
    if share is not None:
        rows = rows.join(share, on="step", how="left")
    late = rows.filter(pl.col("step") > rows["step"].max() / 2)  # type: ignore[operator]
    p = float(late[SHARE].mean()) if SHARE in late.columns else None  # type: ignore[arg-type]
    a, m = float(late[ACC].mean()), float(late[MAJORITY].mean())  # type: ignore[arg-type]
    return {"windows": late.height, "accuracy": a, "majority": m,
            "constant": None if p is None else max(p, 1.0 - p), "acc_minus_majority": a - m}


def adversary_table(live_dir: str | Path, methods: Sequence[str]) -> pl.DataFrame:
    """One row per (method, model) of ``methods`` that logged an adversary, in ``COLUMNS``
    (``model`` = ``[seed-<n>/]fold-<k>``); empty when none did."""
    rows = []
    for method in methods:
        root = Path(live_dir) / method / "plots" / "metrics"
        for run in sorted(p.parent for p in root.rglob(f"{ACC}.tsv")):
            summary = model_summary(run)
            if summary is not None:
                rows.append({"method": method, "model": run.relative_to(root).as_posix(),
                             **summary})  # fmt: skip
    schema = {"method": pl.Utf8, "model": pl.Utf8, "windows": pl.Int64} | {
        c: pl.Float64 for c in COLUMNS[3:]
    }
    return pl.DataFrame(rows, schema=schema, orient="row").select(COLUMNS)


def adversary_markdown(table: pl.DataFrame) -> str:
    """A short section for summary.md: per method, the range over its models of the
    adversary's second-half accuracy, the majority share and their difference."""
    if table.height == 0:
        return ""
    lines = ["", "## AdvBERT's adversary (second half of training)", "",
             "Accuracy of the adversary head on each batch before its update, against the "
             "batch's majority-label share; one value per (seed, fold) model "
             "(`metrics/adversary.csv`, pipeline/report/adversary.py). An adversary that "
             "does not beat the majority class has learnt nothing for the gradient reversal "
             "to remove.", "",
             "| method | models | accuracy | majority share | accuracy − majority | "
             "models above majority |", "|---|---:|---:|---:|---:|---:|"]  # fmt: skip
    for method in dict.fromkeys(table["method"].to_list()):
        part = table.filter(pl.col("method") == method)
        span = {c: f"{_num(part[c].min()):.2f}–{_num(part[c].max()):.2f}"
                for c in ("accuracy", "majority", "acc_minus_majority")}  # fmt: skip
        above = int((part["acc_minus_majority"] > 0).sum())
        mean = _num(part["acc_minus_majority"].mean())
        lines.append(f"| {method} | {part.height} | {span['accuracy']} | {span['majority']} | "
                     f"{mean:+.3f} ({span['acc_minus_majority']}) | {above} of "
                     f"{part.height} |")  # fmt: skip
    return "\n".join(lines) + "\n"


def _num(value: object) -> float:
    return float(value)  # type: ignore[arg-type]
