"""Summary tables of per-method metrics: one row per method, Markdown and CSV."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

# Column families in the order the papers print them; `{k}` is the cut-off.
AT_K = (
    "MRR@{k}", "nDCG@{k}", "ARaB-tc@{k}", "ARaB-tf@{k}", "ARaB-bool@{k}",
    "NFaiRR@{k}", "LIWC@{k}", "AWRF@{k}",
)  # fmt: skip
OVERALL = ("gap-mean", "gap-abs", "gap-male-wins")
DIRECTION = {
    "MRR": "↑", "nDCG": "↑", "NFaiRR": "↑", "AWRF": "↑",
    "ARaB-tc": "→0", "ARaB-tf": "→0", "ARaB-bool": "→0", "LIWC": "↓",
    "gap-mean": "→0", "gap-abs": "↓", "gap-male-wins": "→0.5",
}  # fmt: skip


def summary_frame(metrics: Mapping[str, Mapping[str, object]]) -> pl.DataFrame:
    """All numeric metric keys of every method, one row per method (in the given order)."""
    keys: list[str] = []
    for values in metrics.values():
        keys += [k for k, v in values.items() if _numeric(v) and k not in keys]
    rows = [
        {"method": m, **{k: _as_float(values.get(k)) for k in keys}}
        for m, values in metrics.items()
    ]
    schema = {"method": pl.Utf8, **{k: pl.Float64 for k in keys}}
    return pl.DataFrame(rows, schema=schema)


def _numeric(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _as_float(v: object) -> float | None:
    return float(v) if _numeric(v) else None  # type: ignore[arg-type]


def _header(key: str) -> str:
    base = key.split("@")[0]
    arrow = DIRECTION.get(base, "")
    return f"{key} {arrow}".strip()


def markdown_table(df: pl.DataFrame, columns: Sequence[str], digits: int = 4) -> str:
    """A Markdown table of `columns` (those present) with the method as first column."""
    cols = [c for c in columns if c in df.columns]
    lines = [
        "| method | " + " | ".join(_header(c) for c in cols) + " |",
        "|---|" + "---:|" * len(cols),
    ]
    for row in df.iter_rows(named=True):
        cells = ["" if row[c] is None else f"{row[c]:.{digits}f}" for c in cols]
        lines.append(f"| {row['method']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def summary_markdown(
    df: pl.DataFrame, cutoffs: Sequence[int], info: Mapping[str, str] | None = None
) -> str:
    """The human-readable summary: one table per cut-off, then the counterfactual gap."""
    parts = ["# Summary", ""]
    if info:
        parts += [", ".join(f"{k}: `{v}`" for k, v in info.items()), ""]
    parts += [
        "Arrows: ↑ higher is better, ↓ lower is better, →0 closer to zero is fairer "
        "(ARaB signed: positive = male-leaning). Row `bm25` is the first-stage ranking that "
        "every method reranks.",
        "",
    ]
    for k in cutoffs:
        parts += [f"## Cut-off {k}", "", markdown_table(df, [c.format(k=k) for c in AT_K]), ""]
    if any(c in df.columns for c in OVERALL):
        parts += [
            "## Counterfactual gender gap (rank of female − rank of male relevant version)",
            "",
            markdown_table(df, OVERALL, digits=3),
            "",
        ]
    return "\n".join(parts)
