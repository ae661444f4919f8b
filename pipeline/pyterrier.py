"""A trained model of this project as a PyTerrier re-ranking transformer (optional extra).

``RankerTransformer(model_dir)`` wraps a directory written by :meth:`Ranker.save` (any family:
``models/<method>/[seed-<n>/]fold-<k>/`` after the train stage) as a ``pt.Transformer``:
it maps a result frame ``qid, query, docno, text`` (e.g. BM25 candidates after
``pt.text.get_text``) to the same rows with the model's ``score`` and PyTerrier's 0-based
``rank`` per ``qid``, each query's rows sorted by score descending (ties keep the input
order, as :func:`pyterrier.model.add_ranks` ranks them). Queries keep the order of their
first row. An earlier ``score``/``rank`` (the first stage's) is replaced, as PyTerrier's
re-rankers do.

Scoring is :meth:`Ranker.score_many` under ``torch.inference_mode()``, the same call the
``rerank`` stage makes (``pipeline.rerank.rerank``). Texts are taken from the frame; each
distinct query/document text is one entry of the tables the ranker is bound to, so a
bi-encoder encodes it once.

The project's own tables in PyTerrier's column names (`qid`, `query`, `docno`, `label`,
`score`, `rank`): :func:`topics`, :func:`qrels` and :func:`results` read `data/queries.parquet`,
`data/qrels.parquet` (or `.trec`) and any run (`runs/<method>/[seed-<n>/]run.parquet`, a TREC
run such as `runs/bm25/run.trec`), so `pt.Experiment` compares the pipeline's runs with
`pt.Transformer.from_df(results(path))` as systems, without renaming a column.

Needs the optional extra ``pip install 'pipeline[pyterrier]'`` (``python-terrier``, Terrier
team, University of Glasgow, MPL-2.0). PyTerrier starts Java only for Terrier's own indexing
and retrieval; this transformer never does.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import polars as pl
import torch

from pipeline import io, schemas
from pipeline.errors import InputError
from pipeline.models.encoders import resolve_device
from pipeline.models.registry import load_ranker

try:
    import pyterrier as pt
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "pipeline.pyterrier needs PyTerrier: pip install 'pipeline[pyterrier]' "
        "(or pip install python-terrier)"
    ) from exc

logger = logging.getLogger(__name__)

INPUT_COLUMNS = ("qid", "query", "docno", "text")
NAMES = {"query_id": "qid", "doc_id": "docno", "relevance": "label", "text": "query"}
"""Our column names (DESIGN §3, ir_datasets') → PyTerrier's."""


def topics(path: str | Path = "data/queries.parquet", split: str | None = None) -> pd.DataFrame:
    """PyTerrier topics ``qid, query`` (strings) of a queries table; ``split`` keeps one
    split (``test``, ``train``)."""
    frame = io.read_table(path, schemas.QUERIES)
    if split is not None:
        frame = frame.filter(pl.col("split") == split)
    return frame.select("query_id", "text").to_pandas().rename(columns=NAMES)


def qrels(path: str | Path = "data/qrels.parquet") -> pd.DataFrame:
    """PyTerrier qrels ``qid, docno, label`` of a Parquet (``data/qrels.parquet``) or TREC
    (``data/qrels.trec``) qrels file."""
    from pipeline.evaluate_run import read_qrels

    out = read_qrels(path).select("query_id", "doc_id", "relevance").to_pandas()
    return out.rename(columns=NAMES).astype({"label": "int64"})


def results(path: str | Path) -> pd.DataFrame:
    """A run as a PyTerrier result frame ``qid, docno, score, rank`` (rank 0-based, as
    PyTerrier counts), from ``run.parquet`` or a TREC run file."""
    if str(path).endswith(".parquet"):
        frame = io.read_table(path, schemas.RUN)
    else:
        frame = io.read_trec_run(path)
    out = frame.select("query_id", "doc_id", "score", "rank").sort("query_id", "rank")
    out = out.with_columns(pl.col("rank") - 1).to_pandas().rename(columns=NAMES)
    return out.astype({"score": "float64", "rank": "int64"})


def text_keys(texts: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """Ids of ``texts`` (one per distinct text, in order of first appearance) and the table
    id → text that a ranker is bound to."""
    ids: dict[str, str] = {}
    keys = [ids.setdefault(t, str(len(ids))) for t in texts]
    return keys, {k: t for t, k in ids.items()}


def ranked(frame: pd.DataFrame, scores: Sequence[float]) -> pd.DataFrame:
    """``frame`` with ``score`` and 0-based ``rank`` per ``qid``: queries in order of their
    first row, each query's rows by score descending, ties in input order."""
    out = frame.drop(columns=["score", "rank"], errors="ignore").reset_index(drop=True)
    out["score"] = pd.Series(list(scores), dtype="float64")
    order = pd.DataFrame({
        "q": out.groupby("qid", sort=False).ngroup(),
        "s": out["score"],
        "row": range(len(out)),
    })  # fmt: skip
    order = order.sort_values(["q", "s", "row"], ascending=[True, False, True])
    out = out.iloc[order.index.to_numpy()].reset_index(drop=True)
    out["rank"] = out.groupby("qid", sort=False).cumcount().astype("int64")
    return out


class RankerTransformer(pt.Transformer):
    """Re-rank a PyTerrier result frame with a model trained by this project (module doc)."""

    def __init__(self, model_dir: str | Path, batch_size: int = 64, device: str = "cpu") -> None:
        if batch_size < 1:
            raise InputError(f"batch_size must be >= 1; got {batch_size}")
        self.model_dir = Path(model_dir)
        self.batch_size = batch_size
        try:
            # train_layers only says which weights training updates; at inference it would
            # keep every frame's texts in the shared frozen-bottom cache (Ranker.bind)
            ranker = load_ranker(self.model_dir, train_layers=None)
        except FileNotFoundError as exc:
            raise FileNotFoundError(
                f"RankerTransformer: {exc}. Pass a directory written by Ranker.save, e.g. "
                "models/<method>/fold-0 after `dvc repro`"
            ) from exc
        self.ranker = ranker.to(resolve_device(device)).eval()
        logger.info("PyTerrier transformer for %s (%s)", self.model_dir, self.ranker.arch)

    def __repr__(self) -> str:
        return f"RankerTransformer({str(self.model_dir)!r})"

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        """Score every row's ``(query, text)``; the rows with ``score`` and ``rank``."""
        try:
            pt.validate.result_frame(inp, extra_columns=["query", "text"], context=self)
        except pt.validate.InputValidationError as exc:
            hint = (
                "; RankerTransformer needs columns qid, query, docno, text (add document texts "
                "with `>> pt.text.get_text(dataset_or_index, 'text')`)"
            )
            raise pt.validate.InputValidationError(exc.args[0] + hint, exc.modes) from None
        if inp.empty:
            return ranked(inp, [])
        qids, queries = text_keys([str(t) for t in inp["query"]])
        dids, docs = text_keys([str(t) for t in inp["text"]])
        self.ranker.bind(queries, docs)
        with torch.inference_mode():
            scores = self.ranker.score_many(qids, dids, self.batch_size).double().cpu().tolist()
        self.ranker.bind({}, {})  # release this frame's texts
        _check_finite(inp, scores)
        return ranked(inp, scores)


def _check_finite(frame: pd.DataFrame, scores: Sequence[float]) -> None:
    for row, value in enumerate(scores):
        if not math.isfinite(value):
            qid: Any = frame["qid"].iloc[row]
            docno: Any = frame["docno"].iloc[row]
            raise InputError(
                f"model score {value} for qid {qid!r}, docno {docno!r} is not finite; the "
                "model weights are probably broken (diverged training?)"
            )
