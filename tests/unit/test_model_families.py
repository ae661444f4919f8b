"""Model families × methods (issue 11, SPEC §5.1): every family trains with every loss, the
AdvBERT adversary and PoE on a weak learner's scores, saves, reloads and reranks; the cached
frozen bottom computes what the full forward computes; the bi-encoder encodes each text once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest
import torch

from pipeline.config import fields
from pipeline.models import MODELS
from pipeline.models.base import Ranker
from pipeline.models.registry import load_ranker
from pipeline.rerank import rerank
from pipeline.train.groups import doc_bias, prepare_groups
from pipeline.train.loop import TrainConfig, train_model
from pipeline.train.losses import LOSSES
from pipeline.train.weak import weak_pair_scores
from tests.unit.loss_configs import config
from tests.unit.tiny_rankers import (
    ARCHS,
    CANDIDATES,
    DOC_SCORES,
    DOCS,
    GROUPS,
    QUERIES,
    TRIPLES,
    candidates,
    tiny_ranker,
)

# one step over all four groups (group_size 3: a positive and two negatives per query)
CFG = TrainConfig(batch_size=4, group_size=3, lr=1e-3, warmup_steps=0, seed=0, device="cpu")
LOSS_PARAMS = {"lambda": 0.5, "coef": 0.5, "alpha": 0.1, "margin": 1.0, "adv_weight": 0.5}


def test_registry_holds_one_record_per_family_module() -> None:
    assert sorted(MODELS) == sorted(ARCHS)
    for arch, family in MODELS.items():
        assert family.cls.arch == arch and family.name == arch
        assert family.description and family.usage


def _weak_scores(arch: str) -> dict[str, dict[tuple[str, str], float]]:
    """EqualizeIR's f_B of the same family (one layer), one step, then its pair scores."""
    f_b = tiny_ranker(arch, seed=1, n_layers=1)
    groups = prepare_groups(TRIPLES, CFG.group_size, doc_bias(DOC_SCORES, "tf_abs"))
    train_model(f_b, groups, (("margin", config("margin")),), CFG)
    scores = weak_pair_scores(f_b, TRIPLES)
    assert len(scores) == 4 + 8  # one score per distinct (query, document) pair
    return {"weak": scores}


def _trainable(ranker: Ranker) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in ranker.named_parameters() if p.requires_grad}


@pytest.mark.slow
@pytest.mark.parametrize("method", sorted(LOSSES))
@pytest.mark.parametrize("arch", ARCHS)
def test_family_trains_saves_reloads_and_reranks(arch: str, method: str, tmp_path: Path) -> None:
    """Every loss term, as the method ``[margin, <term>]`` (the term alone when it is a
    whole ranking loss), on every family."""
    ranker = tiny_ranker(arch)
    record = LOSSES[method]
    pairs = _weak_scores(arch) if record.prepare is not None else None
    names = ["margin", method] if record.trainable or record.weight else [method]
    objective = tuple(
        (n, config(n, {k: v for k, v in LOSS_PARAMS.items() if k in fields(LOSSES[n].config)}))
        for n in names
    )
    terms = [record.term(ranker.repr_dim, objective[-1][1], 0)] if record.term else []
    bias = doc_bias(DOC_SCORES, "tf_abs", GROUPS)  # every per-document value a term may read
    groups = prepare_groups(TRIPLES, CFG.group_size, bias, pairs)
    assert [len(d) for d in groups.docs] == [3, 3, 3, 3]
    before = _trainable(ranker)
    head = [p.detach().clone() for t in terms for p in t.parameters()]
    curve = train_model(ranker, groups, objective, CFG, terms=terms)
    assert curve["step"].to_list() == [1] and curve["loss"].is_finite().all()
    after = _trainable(ranker)
    assert before.keys() == after.keys()  # a loss term adds nothing to the ranker
    assert any(not torch.equal(before[n], after[n]) for n in before), "the ranker did not train"
    if terms:
        now = [p.detach() for t in terms for p in t.parameters()]
        assert any(not torch.equal(a, b) for a, b in zip(head, now, strict=True)), (
            "the adversary did not train"
        )
    expected = rerank(ranker, CANDIDATES, batch_size=3)

    ranker.save(tmp_path / "model")
    loaded = load_ranker(tmp_path / "model")
    assert type(loaded) is type(ranker) and loaded.cfg.arch == arch
    assert not loaded.training
    loaded.bind(QUERIES, DOCS)
    got = rerank(loaded, CANDIDATES, batch_size=3)
    assert got.select("query_id", "doc_id").equals(expected.select("query_id", "doc_id"))
    assert got["score"].to_list() == pytest.approx(expected["score"].to_list(), abs=1e-5)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]  # no temporary leftovers


@pytest.mark.slow
@pytest.mark.parametrize("arch", ARCHS)
def test_cached_bottom_equals_the_full_forward(arch: str) -> None:
    """``train_layers=1``: in training mode the bottom layer's states are computed once per
    distinct sequence and cached; scores, document representations and the gradients of the
    trained layers equal those of a full forward pass (dropout off, same weights)."""
    qids = ["q0", "q0", "q0", "q1", "q1", "q2"]
    dids = ["d0", "d2", "d5", "d1", "d0", "d3"]
    cached = tiny_ranker(arch, dropout=False, train_layers=1).train()
    cached.bind(dict(QUERIES), dict(DOCS))  # fresh tables: no other test's cached states
    full = tiny_ranker(arch, dropout=False).train()
    rows = [0]
    embeddings: Any = cached.encoder.base_model.embeddings
    embeddings.register_forward_hook(
        lambda _m, _args, out: rows.__setitem__(0, rows[0] + out.shape[0])
    )
    s_cached, r_cached = cached(qids, dids)
    first = rows[0]
    assert first == (6 if arch == "cross_encoder" else 3 + 5)  # each distinct sequence once
    s_full, r_full = full(qids, dids)
    torch.testing.assert_close(s_cached, s_full, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(r_cached, r_full, atol=1e-5, rtol=1e-5)
    (s_cached.sum() + r_cached.sum()).backward()
    (s_full.sum() + r_full.sum()).backward()
    trained = {n: p for n, p in cached.named_parameters() if p.requires_grad}
    assert any(".layer.1." in n for n in trained) and not any(".layer.0." in n for n in trained)
    grads = dict(full.named_parameters())
    for name, p in trained.items():
        reference = grads[name].grad
        if reference is None:  # unused by this family (the bi-encoder reads no pooler)
            assert p.grad is None, name
            continue
        assert p.grad is not None, name
        torch.testing.assert_close(p.grad, reference, atol=1e-5, rtol=1e-4)
    cached(qids, dids)  # a second step reuses the cached bottom: no embedding call
    assert rows[0] == first
    cached.eval()  # at inference the whole encoder runs, as in the full model
    torch.testing.assert_close(cached(qids, dids)[0], s_full, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("arch", ARCHS)
def test_cached_bottom_ignores_dropout(arch: str) -> None:
    """The frozen bottom is a fixed feature extractor: its cached states are those of the
    bottom in eval mode, whichever random state the first training step saw."""
    qids, dids = ["q0", "q1"], ["d0", "d1"]
    reference = tiny_ranker(arch, train_layers=1)
    other_seed = tiny_ranker(arch, train_layers=1)
    for ranker in (reference, other_seed):
        ranker.bind(dict(QUERIES), dict(DOCS))  # fresh tables: a cache of its own
    torch.manual_seed(0)
    reference.train()(qids, dids)
    torch.manual_seed(1)
    other_seed.train()(qids, dids)
    assert reference._bottom.keys() == other_seed._bottom.keys()
    for key, state in reference._bottom.items():
        torch.testing.assert_close(state, other_seed._bottom[key])


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["bi_encoder", "late_interaction"])
def test_reranking_encodes_each_distinct_text_once(arch: str) -> None:
    ranker = tiny_ranker(arch)
    n_pairs = CANDIDATES.height
    n_queries = CANDIDATES["query_id"].n_unique()
    n_docs = CANDIDATES["doc_id"].n_unique()
    assert n_docs < n_pairs  # documents recur across queries
    ranker.encoded = 0
    run = rerank(ranker, CANDIDATES, batch_size=2)
    assert ranker.encoded == n_queries + n_docs == 4 + 8  # not 2 per pair (= 30)
    single = tiny_ranker(arch)
    for q, d, s in run.select("query_id", "doc_id", "score").iter_rows():
        with torch.inference_mode():
            alone = single.eval()([q], [d])[0]
        assert s == pytest.approx(float(alone[0]), abs=1e-5)


def test_cross_encoder_encodes_each_distinct_pair_once() -> None:
    ranker = tiny_ranker("cross_encoder")
    cands = pl.concat([CANDIDATES, CANDIDATES.head(3)])  # three pairs twice
    ranker.encoded = 0
    ranker.eval()
    with torch.inference_mode():
        ranker(cands["query_id"].to_list(), cands["doc_id"].to_list())
    assert ranker.encoded == CANDIDATES.height


@pytest.mark.parametrize("arch", ["bi_encoder", "late_interaction"])
def test_training_step_encodes_each_text_of_a_batch_once(arch: str) -> None:
    ranker = tiny_ranker(arch)
    qids = ["q0", "q0", "q0", "q1", "q1", "q1"]
    dids = ["d0", "d2", "d5", "d1", "d2", "d5"]
    ranker.train()(qids, dids)
    assert ranker.encoded == 2 + 4


@pytest.mark.slow
def test_reranked_scores_do_not_depend_on_the_candidate_set() -> None:
    """A document's bi-encoder score is its own: reranking one query alone gives its scores."""
    ranker = tiny_ranker("bi_encoder")
    both = rerank(ranker, CANDIDATES, batch_size=4).filter(pl.col("query_id") == "q0")
    alone = rerank(ranker, candidates({"q0": ["d0", "d7", "d1", "d2"]}), batch_size=1)
    assert both["doc_id"].to_list() == alone["doc_id"].to_list()
    assert both["score"].to_list() == pytest.approx(alone["score"].to_list(), abs=1e-5)


@pytest.mark.parametrize("arch", ARCHS)
def test_cached_bottom_follows_the_bound_texts(arch: str) -> None:
    """A text table freed and replaced by a new one (which CPython often places at the freed
    address) must not inherit the old table's cached states: the new query's score is its own.
    """
    ranker = tiny_ranker(arch, dropout=False, train_layers=1).train()
    ranker.bind({**QUERIES, "q0": "who is a nurse"}, DOCS)
    with torch.no_grad():
        first = float(ranker(["q0"], ["d0"])[0][0])
    ranker.bind(QUERIES, DOCS)  # drops the last reference to the first table
    other = {**QUERIES, "q0": "completely different words about cars"}
    ranker.bind(other, DOCS)
    with torch.no_grad():
        second = float(ranker(["q0"], ["d0"])[0][0])
    full = tiny_ranker(arch, dropout=False).eval()
    full.bind(other, DOCS)
    with torch.no_grad():
        expected = float(full(["q0"], ["d0"])[0][0])
    assert second == pytest.approx(expected, abs=1e-5)
    assert first != pytest.approx(second, abs=1e-6)


def test_rankers_with_other_bottom_weights_do_not_share_cached_states() -> None:
    """Two seeds of a random encoder have different frozen bottoms: bound to the same text
    tables, each computes its own states (issue 31: the shared cache was keyed by the
    checkpoint's name, so a second seed read the first one's states)."""
    queries, docs = dict(QUERIES), dict(DOCS)
    first = tiny_ranker("bi_encoder", seed=0, dropout=False, train_layers=1).train()
    second = tiny_ranker("bi_encoder", seed=1, dropout=False, train_layers=1).train()
    same = tiny_ranker("bi_encoder", seed=0, dropout=False, train_layers=1).train()
    for ranker in (first, second, same):
        ranker.bind(queries, docs)
    assert first.bottom_fingerprint() != second.bottom_fingerprint()
    assert first._bottom is same._bottom and first._bottom is not second._bottom
    with torch.no_grad():
        first(["q0"], ["d0"])
        got = second(["q0"], ["d0"])[0]
        reference = tiny_ranker("bi_encoder", seed=1, dropout=False).eval()
        reference.bind(queries, docs)
        expected = reference(["q0"], ["d0"])[0]
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("term", sorted(LOSSES))
def test_every_weak_loss_that_params_accept_trains_the_weak_learner(term: str) -> None:
    """EqualizeIR's ``weak_loss``: every term that loads as one (``PoeConfig.weak_term``)
    trains f_B on the groups ``weak_scores`` builds (Ψ and ζ, no versions); the others are
    refused at load, not inside train (issue 44)."""
    from pipeline.config import ParamsError
    from pipeline.train.losses.poe import PoeConfig

    own = fields(LOSSES[term].config)
    settings = {k: v for k, v in LOSS_PARAMS.items() if k in own} | (
        {"docs": "both"} if "docs" in own else {})  # fmt: skip
    try:
        weak = PoeConfig("less_data", weak_loss={term: settings}).weak_term()
    except ParamsError as e:
        assert "not a term the weak learner trains with" in str(e)
        return
    f_b = tiny_ranker(ARCHS[0], seed=1, n_layers=1)
    groups = prepare_groups(TRIPLES, CFG.group_size, doc_bias(DOC_SCORES, "tf_abs"))
    curve = train_model(f_b, groups, (weak,), CFG)
    assert curve["loss"].is_finite().all()
