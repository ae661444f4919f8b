"""Training examples: the triples' query–passage pair inputs with Ψ and ζ of each document.

``prepare_examples`` tokenises every text once and looks up the bias values the losses read
(``psi_pos``, ``psi_neg``, ``zeta_pos``, ``zeta_neg``); unknown ids and missing or NaN bias
values raise errors naming the document.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import polars as pl
import torch
from torch import Tensor

from pipeline.schemas import PSI_SOURCE
from pipeline.train.batching import Pair, PairEncoder

TRIPLE_COLUMNS = ("query_id", "pos_doc_id", "neg_doc_id")


@dataclass(frozen=True)
class TrainExamples:
    """Pair inputs of every triple's positive and negative, with their Ψ and ζ."""

    pos: list[Pair]
    neg: list[Pair]
    bias: dict[str, Tensor]  # psi_pos, psi_neg, zeta_pos, zeta_neg, each [n_triples] float32


def doc_bias(
    doc_scores: pl.DataFrame, psi_column: str
) -> tuple[dict[str, float], dict[str, float]]:
    """``(Ψ by doc_id, ζ by doc_id)`` with Ψ = ``|doc_scores[PSI_SOURCE[psi_column]]|``."""
    if psi_column not in PSI_SOURCE:
        raise ValueError(f"unknown psi {psi_column!r}; known: {sorted(PSI_SOURCE)}")
    col = PSI_SOURCE[psi_column]
    missing = {"doc_id", col, "neutrality"} - set(doc_scores.columns)
    if missing:
        raise ValueError(f"doc_scores lacks columns {sorted(missing)}; has {doc_scores.columns}")
    values = pl.col(col, "neutrality").cast(pl.Float64)
    bad = doc_scores.filter(pl.any_horizontal(values.is_null() | values.is_nan()))
    if bad.height:
        doc_id = bad["doc_id"][0]
        raise ValueError(f"doc_scores has a missing/NaN {col} or neutrality for doc_id {doc_id!r}")
    ids = doc_scores["doc_id"].cast(pl.String).to_list()
    psi = doc_scores[col].cast(pl.Float64).abs().to_list()
    zeta = doc_scores["neutrality"].cast(pl.Float64).to_list()
    return dict(zip(ids, psi, strict=True)), dict(zip(ids, zeta, strict=True))


def _lookup(table: Mapping[str, float], ids: list[str]) -> Tensor:
    for doc_id in ids:
        if doc_id not in table:
            raise ValueError(f"doc_id {doc_id!r} of the triples has no row in doc_scores")
    return torch.tensor([table[d] for d in ids], dtype=torch.float32)


def prepare_examples(
    encoder: PairEncoder,
    triples: pl.DataFrame,
    queries: Mapping[str, str],
    docs: Mapping[str, str],
    bias: tuple[dict[str, float], dict[str, float]],
) -> TrainExamples:
    """Tokenise the triples' texts once and attach Ψ/ζ of each positive and negative."""
    missing = set(TRIPLE_COLUMNS) - set(triples.columns)
    if missing:
        raise ValueError(f"triples lack columns {sorted(missing)}; has {triples.columns}")
    qids, pos, neg = (triples[c].cast(pl.String).to_list() for c in TRIPLE_COLUMNS)
    encoder.add(queries, docs, qids, pos + neg)
    psi, zeta = bias
    tensors = {
        "psi_pos": _lookup(psi, pos),
        "psi_neg": _lookup(psi, neg),
        "zeta_pos": _lookup(zeta, pos),
        "zeta_neg": _lookup(zeta, neg),
    }
    return TrainExamples(
        pos=[encoder.pair(q, d) for q, d in zip(qids, pos, strict=True)],
        neg=[encoder.pair(q, d) for q, d in zip(qids, neg, strict=True)],
        bias=tensors,
    )
