"""DistributedDataParallel on CPU: two gloo ranks follow the single-process loss curve."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
import torch
from torch import nn

from pipeline.models import family_names
from pipeline.models.base import Ranker
from pipeline.params import load_params
from pipeline.train.distributed import Rank, check_world, shard
from pipeline.train.loop import TrainConfig
from tests.unit.test_train_loop import TRIPLES, ranker, train
from tests.unit.tiny_rankers import no_dropout

# 21 triples in global batches of 4: the 6th batch holds one triple, so rank 1's shard of it
# is empty and takes part with weight 0.
TRIPLES_21 = pl.concat([TRIPLES, TRIPLES.head(1)])
CFG = TrainConfig(
    batch_size=4, group_size=2, lr=1e-3, warmup_steps=1, seed=0, log_every=1, device="cpu"
)


def _model(arch: str = "cross_encoder", **overrides: object) -> Ranker:
    """Tiny ranker without dropout: ranks draw different dropout masks than a single process."""
    model = ranker(arch, **overrides)
    no_dropout(model)
    return model


def _train(
    devices: int, arch: str = "cross_encoder", overrides: dict[str, object] | None = None,
    triples: pl.DataFrame = TRIPLES_21, **kw: object,
) -> tuple[Ranker, pl.DataFrame]:  # fmt: skip
    model = _model(arch, **(overrides or {}))
    cfg = TrainConfig(**{**CFG.__dict__, "devices": devices})
    curve = train(model, triples, cfg=cfg, **kw)  # type: ignore[arg-type]
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
    with pytest.raises(ValueError, match=r"'batch_size': 6 is not a multiple of devices \(4\)"):
        TrainConfig(batch_size=6, devices=4)
    with pytest.raises(ValueError, match=r"3 training processes were started .* train\.devices"):
        check_world(2, 6, Rank(0, 3))
    check_world(1, 6, Rank(0, 3))  # devices left at 1: torchrun decides


DEFAULT = load_params(Path(__file__).resolve().parents[2] / "params.yaml").model
FAMILIES: dict[str, dict[str, object]] = {
    arch: {"train_layers": DEFAULT.train_layers} if arch == DEFAULT.arch else {}
    for arch in family_names()
}  # every registered family; the default's with the default recipe (its trained layers)


@pytest.mark.slow
@pytest.mark.parametrize("arch", sorted(FAMILIES))
def test_two_gloo_ranks_match_one_process(arch: str, tmp_path: Path) -> None:
    single, curve1 = _train(1, arch, FAMILIES[arch])
    ddp, curve2 = _train(2, arch, FAMILIES[arch], checkpoint_dir=tmp_path, checkpoint_every=3)
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
    single_w, ddp_w, init_w = (_flat(m) for m in (single, ddp, _model(arch, **FAMILIES[arch])))
    moved = (single_w - init_w).norm()
    assert moved > 0.05
    assert (ddp_w - single_w).norm() / moved < 1e-2
    # rank 0 alone wrote the checkpoint of step 6 (= the last step)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint.pt"]
    assert torch.load(tmp_path / "checkpoint.pt", weights_only=True)["step"] == 6


@pytest.mark.slow
def test_rank_error_reaches_the_caller() -> None:
    """Every triple names a query without text: both ranks fail in their first step."""
    bad = TRIPLES_21.with_columns(query_id=pl.lit("q404"))
    with pytest.raises(ValueError, match=r"query_id 'q404' has no text .*\(training rank"):
        _train(2, triples=bad)
