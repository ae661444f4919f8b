"""EqualizeIR weak learner f_B: its training setup and its precomputed scores (SPEC §6.3).

Paper: EqualizeIR (weak learner + product of experts, equal ranking quality across query
complexity). Four strategies make f_B weak/biased; each returns a :class:`WeakSetup` (what
to train f_B on and how) for the ordinary training loop. After training, :func:`score_triples`
precomputes f_B's scores of every training triple for the ``poe`` loss, and
:func:`weak_tensors` turns them into the batch tensors ``weak_pos``/``weak_neg``.

Inputs: the (ordered) training triples, the query texts, the full run's optimiser steps.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import polars as pl
import torch
from torch import Tensor
from transformers import PreTrainedTokenizerBase

from pipeline.bias.complexity import STOP_WORDS
from pipeline.rerank import score_ids
from pipeline.train.model import CrossEncoder

logger = logging.getLogger(__name__)

FRACTION = 0.2
"""Share of triples (``less_data``) or of optimiser steps (``fewer_steps``)."""
N_LAYERS = 2
"""Encoder layers of ``weaker_model``."""
TRIPLE_COLUMNS = ("query_id", "pos_doc_id", "neg_doc_id")


@dataclass(frozen=True)
class WeakSetup:
    """How to train f_B: on ``triples`` with ``queries``, ``n_layers`` and ``max_steps``.

    ``None`` keeps the robust model's setting (all layers; steps of one pass over
    ``triples``).
    """

    strategy: str
    triples: pl.DataFrame
    queries: Mapping[str, str]
    n_layers: int | None = None
    max_steps: int | None = None


class Strategy(Protocol):
    def __call__(
        self,
        triples: pl.DataFrame,
        queries: Mapping[str, str],
        total_steps: int,
        seed: int,
        fraction: float = FRACTION,
        n_layers: int = N_LAYERS,
    ) -> WeakSetup: ...


def _check_fraction(fraction: float) -> None:
    if not 0 < fraction <= 1:
        raise ValueError(f"weak learner fraction must be in (0, 1]; got {fraction}")


def less_data(
    triples: pl.DataFrame,
    queries: Mapping[str, str],
    total_steps: int,
    seed: int,
    fraction: float = FRACTION,
    n_layers: int = N_LAYERS,
) -> WeakSetup:
    """A seeded ``fraction`` (20%) of the triples, at least one, in their given order."""
    _check_fraction(fraction)
    n = triples.height
    keep = np.sort(
        np.random.default_rng(seed).choice(n, size=max(1, round(fraction * n)), replace=False)
    )
    return WeakSetup("less_data", triples[keep], queries)


def weaker_model(
    triples: pl.DataFrame,
    queries: Mapping[str, str],
    total_steps: int,
    seed: int,
    fraction: float = FRACTION,
    n_layers: int = N_LAYERS,
) -> WeakSetup:
    """All triples, an encoder cut to its first ``n_layers`` (2) layers."""
    if n_layers < 1:
        raise ValueError(f"weaker_model needs n_layers >= 1; got {n_layers}")
    return WeakSetup("weaker_model", triples, queries, n_layers=n_layers)


def fewer_steps(
    triples: pl.DataFrame,
    queries: Mapping[str, str],
    total_steps: int,
    seed: int,
    fraction: float = FRACTION,
    n_layers: int = N_LAYERS,
) -> WeakSetup:
    """All triples, ``max(1, round(fraction × total_steps))`` (20%) optimiser steps."""
    _check_fraction(fraction)
    return WeakSetup(
        "fewer_steps", triples, queries, max_steps=max(1, round(fraction * total_steps))
    )


_TOKEN = re.compile(r"\S+")
_WORD = re.compile(r"\w+")


def _is_content(token: str) -> bool:
    words = _WORD.findall(token.lower())
    return bool(words) and not all(w in STOP_WORDS for w in words)


def repeat_noun_phrases(query: str) -> str:
    """``query`` with each approximate noun phrase repeated right after itself.

    **Approximation** (no parser offline): a noun phrase is a maximal run of consecutive
    content tokens (not in the English stop-word list of ``pipeline.bias.complexity``), e.g.
    ``"what is a nurse practitioner salary"`` → ``"what is a nurse practitioner salary nurse
    practitioner salary"``.
    """
    tokens = _TOKEN.findall(query)
    out: list[str] = []
    run: list[str] = []
    for token in [*tokens, ""]:
        if token and _is_content(token):
            run.append(token)
            continue
        out.extend(run + run)
        run = []
        if token:
            out.append(token)
    return " ".join(out)


def biased_data(
    triples: pl.DataFrame,
    queries: Mapping[str, str],
    total_steps: int,
    seed: int,
    fraction: float = FRACTION,
    n_layers: int = N_LAYERS,
) -> WeakSetup:
    """All triples, each training query with its (approximate) noun phrases repeated."""
    ids = triples["query_id"].cast(pl.String).unique().to_list()
    missing = [q for q in ids if q not in queries]
    if missing:
        raise ValueError(
            f"query id {missing[0]!r} of the triples has no text ({len(missing)} missing)"
        )
    return WeakSetup("biased_data", triples, {q: repeat_noun_phrases(queries[q]) for q in ids})


STRATEGIES: dict[str, Strategy] = {
    "less_data": less_data,
    "weaker_model": weaker_model,
    "fewer_steps": fewer_steps,
    "biased_data": biased_data,
}


def weak_setup(
    strategy: str, triples: pl.DataFrame, queries: Mapping[str, str], total_steps: int, seed: int
) -> WeakSetup:
    """The :class:`WeakSetup` of a named strategy; an unknown name lists the known ones."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown weak learner strategy {strategy!r}; known: {sorted(STRATEGIES)}")
    return STRATEGIES[strategy](triples, queries, total_steps, seed)


def score_triples(
    model: CrossEncoder,
    tokenizer: PreTrainedTokenizerBase,
    triples: pl.DataFrame,
    queries: Mapping[str, str],
    docs: Mapping[str, str],
    max_len: int = 128,
    q_len: int = 32,
    batch_size: int = 64,
    device: str | torch.device = "auto",
) -> pl.DataFrame:
    """f_B's scores of each triple's documents: the triple columns plus ``weak_pos``, ``weak_neg``.

    Rows align with ``triples``. Every unique (query, document) pair is scored once, with
    the original query texts (f_B is applied to the data f_R trains on); ``model`` is left
    on ``device``.
    """
    qids, pos, neg = (triples[c].cast(pl.String).to_list() for c in TRIPLE_COLUMNS)
    keys = list(dict.fromkeys([*zip(qids, pos, strict=True), *zip(qids, neg, strict=True)]))
    texts, lengths = (queries, docs), (max_len, q_len)
    values = score_ids(model, tokenizer, keys, texts, lengths, batch_size, device)
    table = dict(zip(keys, values, strict=True))
    logger.info("weak learner scored %d pairs of %d triples", len(keys), triples.height)
    return triples.select(*TRIPLE_COLUMNS).with_columns(
        pl.Series("weak_pos", [table[k] for k in zip(qids, pos, strict=True)], dtype=pl.Float64),
        pl.Series("weak_neg", [table[k] for k in zip(qids, neg, strict=True)], dtype=pl.Float64),
    )


def weak_tensors(triples: pl.DataFrame, scored: pl.DataFrame) -> dict[str, Tensor]:
    """``{"weak_pos", "weak_neg"}`` float32 ``[n_triples]`` for ``triples`` in their order.

    ``scored`` is :func:`score_triples`' output for any superset of the (query, document)
    pairs, in any order; a pair it lacks raises ``ValueError`` naming it.
    """
    table: dict[tuple[str, str], float] = {}
    for side in ("pos", "neg"):
        part = scored.select(
            pl.col("query_id").cast(pl.String),
            pl.col(f"{side}_doc_id").cast(pl.String),
            f"weak_{side}",
        )
        table.update({(q, d): float(s) for q, d, s in part.iter_rows()})
    out: dict[str, Tensor] = {}
    qids = triples["query_id"].cast(pl.String).to_list()
    for side in ("pos", "neg"):
        docs = triples[f"{side}_doc_id"].cast(pl.String).to_list()
        values = []
        for key in zip(qids, docs, strict=True):
            if key not in table:
                raise ValueError(
                    f"no weak learner score for query {key[0]!r}, doc {key[1]!r}; rescore"
                )
            values.append(table[key])
        out[f"weak_{side}"] = torch.tensor(values, dtype=torch.float32)
    return out
