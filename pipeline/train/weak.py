"""EqualizeIR weak learner f_B: its training setup and its precomputed scores (SPEC §6.3).

Paper: EqualizeIR (weak learner + product of experts, equal ranking quality across query
complexity). Four strategies make f_B weak/biased; each returns a :class:`WeakSetup` (what
to train f_B on and how) for the ordinary training loop. After training,
:func:`weak_pair_scores` precomputes f_B's score of every training pair for the ``poe`` loss.

Inputs: the (ordered) training triples, the query texts, the full run's optimiser steps.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import polars as pl
import torch

from pipeline.bias.complexity import STOP_WORDS
from pipeline.errors import InputError
from pipeline.models.base import Ranker
from pipeline.schemas import TRIPLE_COLUMNS
from pipeline.train.losses import Prepared

if TYPE_CHECKING:
    from pipeline.train.losses.poe import PoeConfig

logger = logging.getLogger(__name__)

FRACTION = 0.2
"""Share of triples (``less_data``) or of optimiser steps (``fewer_steps``)."""
N_LAYERS = 1
"""Encoder layers of ``weaker_model`` when not configured (``methods.<m>.weak_layers``)."""


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


@dataclass(frozen=True)
class WeakInputs:
    """What a strategy may read: the robust run's ``triples`` (ordered), ``queries`` texts,
    ``total_steps`` and ``seed``, plus the strategy knobs ``fraction`` and ``n_layers``."""

    triples: pl.DataFrame
    queries: Mapping[str, str]
    total_steps: int
    seed: int
    fraction: float = FRACTION
    n_layers: int = N_LAYERS


Strategy = Callable[[WeakInputs], WeakSetup]


def _check_fraction(fraction: float) -> None:
    if not 0 < fraction <= 1:
        raise InputError(f"weak learner fraction must be in (0, 1]; got {fraction}")


def less_data(inp: WeakInputs) -> WeakSetup:
    """A seeded ``fraction`` (20%) of the triples, at least one, in their given order."""
    _check_fraction(inp.fraction)
    n = inp.triples.height
    size = max(1, round(inp.fraction * n))
    keep = np.sort(np.random.default_rng(inp.seed).choice(n, size=size, replace=False))
    return WeakSetup("less_data", inp.triples[keep], inp.queries)


def weaker_model(inp: WeakInputs) -> WeakSetup:
    """All triples, an encoder cut to its first ``n_layers`` (2) layers."""
    if inp.n_layers < 1:
        raise InputError(f"weaker_model needs n_layers >= 1; got {inp.n_layers}")
    return WeakSetup("weaker_model", inp.triples, inp.queries, n_layers=inp.n_layers)


def fewer_steps(inp: WeakInputs) -> WeakSetup:
    """All triples, ``max(1, round(fraction × total_steps))`` (20%) optimiser steps."""
    _check_fraction(inp.fraction)
    steps = max(1, round(inp.fraction * inp.total_steps))
    return WeakSetup("fewer_steps", inp.triples, inp.queries, max_steps=steps)


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


def biased_data(inp: WeakInputs) -> WeakSetup:
    """All triples, each training query with its (approximate) noun phrases repeated."""
    ids = inp.triples["query_id"].cast(pl.String).unique().to_list()
    missing = [q for q in ids if q not in inp.queries]
    if missing:
        raise InputError(
            f"query id {missing[0]!r} of the triples has no text ({len(missing)} missing)"
        )
    rewritten = {q: repeat_noun_phrases(inp.queries[q]) for q in ids}
    return WeakSetup("biased_data", inp.triples, rewritten)


STRATEGIES: dict[str, Strategy] = {
    "less_data": less_data,
    "weaker_model": weaker_model,
    "fewer_steps": fewer_steps,
    "biased_data": biased_data,
}


def weak_setup(
    strategy: str,
    triples: pl.DataFrame,
    queries: Mapping[str, str],
    total_steps: int,
    seed: int,
    n_layers: int | None = None,
) -> WeakSetup:
    """The :class:`WeakSetup` of a named strategy; an unknown name lists the known ones."""
    if strategy not in STRATEGIES:
        raise InputError(f"unknown weak learner strategy {strategy!r}; known: {sorted(STRATEGIES)}")
    layers = N_LAYERS if n_layers is None else n_layers
    return STRATEGIES[strategy](WeakInputs(triples, queries, total_steps, seed, n_layers=layers))


def weak_pair_scores(
    model: Ranker, triples: pl.DataFrame, batch_size: int = 64
) -> dict[tuple[str, str], float]:
    """f_B's score of every distinct (query, document) pair of ``triples`` (with the original
    query texts: f_B is applied to the data f_R trains on), for the ``poe`` loss's groups."""
    qids, pos, neg = (triples[c].cast(pl.String).to_list() for c in TRIPLE_COLUMNS)
    keys = list(dict.fromkeys([*zip(qids, pos, strict=True), *zip(qids, neg, strict=True)]))
    model.eval()
    with torch.inference_mode():
        values = model.score_many([k[0] for k in keys], [k[1] for k in keys], batch_size)
    logger.info("weak learner scored %d pairs of %d triples", len(keys), triples.height)
    return dict(zip(keys, values.tolist(), strict=True))


def weak_scores(ctx: Prepared, cfg: PoeConfig) -> dict[tuple[str, str], float]:
    """EqualizeIR (SPEC §6.3): train f_B of the ranker's family by ``cfg.weak_strategy`` with
    the loss term ``cfg.weak_loss`` (:meth:`PoeConfig.weak_term`), then score the fold's
    training pairs; with the fold's test candidates (``ctx.test``) f_B also reranks them into
    ``ctx.runs["weak"]`` (issue 21: a weak learner must be weaker, not useless)."""
    from pipeline.models.registry import build_ranker
    from pipeline.train.groups import doc_bias, prepare_groups
    from pipeline.train.loop import train_model

    params, triples, (queries, docs) = ctx.params, ctx.triples, ctx.texts
    train = dataclasses.replace(params.train, seed=ctx.seed)
    bias = doc_bias(ctx.doc_scores, ctx.psi)
    total = train.total_steps(len(prepare_groups(triples, train.group_size, bias)))
    s = weak_setup(cfg.weak_strategy, triples, queries, total, ctx.seed, cfg.weak_layers)
    model_cfg = params.model
    if s.n_layers is not None:
        model_cfg = dataclasses.replace(model_cfg, n_layers=s.n_layers)
    f_b = build_ranker(model_cfg, ctx.seed)
    f_b.bind(s.queries, docs)
    if model_cfg == params.model and s.queries is queries:  # same bottom, same texts
        f_b.preload(ctx.features)
    groups = prepare_groups(s.triples, train.group_size, bias)
    weak_train = dataclasses.replace(train, max_steps=s.max_steps or train.max_steps)
    objective = (cfg.weak_term(),)
    train_model(f_b, groups, objective, weak_train)
    f_b.bind(queries, docs)
    if ctx.test is not None and ctx.test.height:
        from pipeline.rerank import rerank

        ctx.runs["weak"] = rerank(f_b, ctx.test, params.rerank.batch_size)
    return weak_pair_scores(f_b, triples)
