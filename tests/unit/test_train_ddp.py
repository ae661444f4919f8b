"""DistributedDataParallel on CPU: two gloo ranks follow the single-process loss curve."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
import torch
from torch import nn

from pipeline.train.distributed import Rank, check_world, shard
from pipeline.train.loop import TrainConfig, train_model
from pipeline.train.model import CrossEncoder, load_model
from tests.unit.test_train_loop import DOC_SCORES, DOCS, QUERIES, TRIPLES

# 21 triples in global batches of 4: the 6th batch holds one triple, so rank 1's shard of it
# is empty and takes part with weight 0.
TRIPLES_21 = pl.concat([TRIPLES, TRIPLES.head(1)])
CFG = TrainConfig(
    batch_size=4,
    lr=1e-3,
    warmup_steps=1,
    max_len=32,
    q_len=8,
    seed=0,
    log_every=1,
    device="cpu",
)


def _model() -> tuple[object, CrossEncoder]:
    """Tiny BERT without dropout: ranks draw different dropout masks than a single process."""
    tok, model = load_model("tiny-random-bert", None, seed=0)
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.p = 0.0
    return tok, model


def _train(devices: int, **kw: object) -> tuple[CrossEncoder, pl.DataFrame]:
    tok, model = _model()
    cfg = TrainConfig(**{**CFG.__dict__, "devices": devices})
    curve = train_model(
        model,
        tok,
        TRIPLES_21,
        QUERIES,
        DOCS,
        DOC_SCORES,
        "penalty_both",  # type: ignore[arg-type]
        {"lambda": 0.5},
        "bool_abs",
        cfg,
        **kw,
    )
    return model, curve


def _flat(model: nn.Module) -> torch.Tensor:
    return torch.cat([t.flatten().double() for t in model.state_dict().values()])


def test_shards_keep_the_training_order() -> None:
    idx = [8, 9, 10, 11]
    assert shard(idx, 4, Rank(0, 2)) == ([8, 9], 1.0)
    assert shard(idx, 4, Rank(1, 2)) == ([10, 11], 1.0)
    # short last batch [20]: rank 0 takes it whole (weight 2 × 1/1), rank 1 joins with weight 0
    assert shard([20], 4, Rank(0, 2)) == ([20], 2.0)
    assert shard([20], 4, Rank(1, 2)) == ([20], 0.0)
    assert shard(idx, 4, Rank()) == (idx, 1.0)


def test_process_count_must_match_config() -> None:
    with pytest.raises(ValueError, match=r"batch_size a multiple of devices"):
        TrainConfig(batch_size=6, devices=4)
    with pytest.raises(ValueError, match=r"3 training processes were started .* train\.devices"):
        check_world(2, 6, Rank(0, 3))
    check_world(1, 6, Rank(0, 3))  # devices left at 1: torchrun decides


@pytest.mark.slow
def test_two_gloo_ranks_match_one_process(tmp_path: Path) -> None:
    single, curve1 = _train(1)
    ddp, curve2 = _train(2, checkpoint_dir=tmp_path, checkpoint_every=3)
    assert curve2["step"].to_list() == curve1["step"].to_list() == [1, 2, 3, 4, 5, 6]
    assert curve2["lr"].to_list() == curve1["lr"].to_list()
    torch.testing.assert_close(
        torch.tensor(curve2["loss"].to_list()),
        torch.tensor(curve1["loss"].to_list()),
        rtol=1e-5,
        atol=1e-6,
    )
    assert curve1["loss"].n_unique() > 1  # the curve moves: the comparison is not vacuous
    # Adam turns float noise in near-zero gradients (e.g. attention key biases, whose exact
    # gradient is 0) into ±lr steps, so compare how far apart the runs end relative to how far
    # training moved: ~6e-4 here; a rank without gradient sync, or ranks stepping shared
    # weights, gives ~1.
    single_w, ddp_w, init_w = (_flat(m) for m in (single, ddp, _model()[1]))
    moved = (single_w - init_w).norm()
    assert moved > 0.1
    assert (ddp_w - single_w).norm() / moved < 1e-2
    # rank 0 alone wrote the checkpoint of step 6 (= the last step)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint.pt"]
    assert torch.load(tmp_path / "checkpoint.pt", weights_only=True)["step"] == 6


@pytest.mark.slow
def test_rank_error_reaches_the_caller() -> None:
    bad = DOC_SCORES.filter(pl.col("doc_id") != "d4")
    tok, model = _model()
    cfg = TrainConfig(**{**CFG.__dict__, "devices": 2})
    with pytest.raises(ValueError, match=r"doc_id 'd4' .*no row in doc_scores \(training rank"):
        train_model(model, tok, TRIPLES_21, QUERIES, DOCS, bad, "margin", {}, "bool_abs", cfg)  # type: ignore[arg-type]
