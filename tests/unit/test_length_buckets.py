"""Length-bucketed batches (`train.length_window`): a regrouping of the plain batch plan."""

from __future__ import annotations

import random

import pytest
import torch

from pipeline.train.loop import TrainConfig, batch_plan
from tests.unit.test_train_loop import CFG, ranker, train
from tests.unit.tiny_rankers import no_dropout

_RNG = random.Random(3)
LENGTHS = [_RNG.randint(8, 200) for _ in range(1000)]


def test_without_window_batches_are_consecutive_slices() -> None:
    plan = batch_plan(list(range(10)), TrainConfig(batch_size=4))
    assert plan == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


@pytest.mark.parametrize("window", [1, 3, 8, 1000])
def test_window_regroups_each_run_of_batches_and_nothing_else(window: int) -> None:
    cfg = TrainConfig(batch_size=16, length_window=window)
    plan = batch_plan(LENGTHS, cfg)
    span = window * 16
    flat = [i for batch in plan for i in batch]
    assert sorted(flat) == list(range(len(LENGTHS)))  # every triple once per pass
    assert [len(b) for b in plan].count(16) >= len(plan) - 1
    for pos, i in enumerate(flat):  # an ordering (the curriculum) moves by < one window
        assert pos // span == i // span
    for batch in plan:  # a batch is a run of its window's length-sorted triples
        lo, hi = min(LENGTHS[i] for i in batch), max(LENGTHS[i] for i in batch)
        start = batch[0] // span * span
        window_ids = range(start, min(start + span, len(LENGTHS)))
        between = [i for i in window_ids if lo < LENGTHS[i] < hi and i not in batch]
        assert not between


def test_window_cuts_padding_and_is_seeded() -> None:
    plain = batch_plan(LENGTHS, TrainConfig(batch_size=16))
    bucketed = batch_plan(LENGTHS, TrainConfig(batch_size=16, length_window=50))

    def padded(plan: list[list[int]]) -> int:
        return sum(len(b) * max(LENGTHS[i] for i in b) for b in plan)

    assert padded(bucketed) < 0.7 * padded(plain)
    again = batch_plan(LENGTHS, TrainConfig(batch_size=16, length_window=50))
    other = batch_plan(LENGTHS, TrainConfig(batch_size=16, length_window=50, seed=1))
    assert bucketed == again and bucketed != other


def test_window_one_keeps_each_batch_of_the_plain_plan() -> None:
    plain = batch_plan(LENGTHS, TrainConfig(batch_size=16))
    one = batch_plan(LENGTHS, TrainConfig(batch_size=16, length_window=1))
    assert [sorted(b) for b in one] == plain


@pytest.mark.slow
def test_training_with_a_window_equals_plain_training_when_batches_are_the_same() -> None:
    """Window 1 only reorders triples inside a batch: the loss is a mean, so without dropout
    the trained weights equal the plain run's up to float summation order, amplified by Adam
    (≈1e-5; a different batch composition moves weights by ≈ lr = 1e-3)."""
    weights, curves = [], []
    for window in (None, 1):
        model = no_dropout(ranker())
        cfg = TrainConfig(**{**CFG.__dict__, "length_window": window})
        curve = train(model, loss="margin", cfg=cfg)
        weights.append(model.state_dict())
        curves.append(curve["loss"].to_list())
    plain, bucketed = weights
    assert curves[0] == pytest.approx(curves[1], rel=1e-5)
    assert all(torch.allclose(plain[k], bucketed[k], atol=1e-4) for k in plain)


@pytest.mark.slow
def test_training_with_regrouped_batches_differs() -> None:
    """The check above can fail: other batch compositions give other weights."""
    weights = []
    for window in (None, 5):
        model = ranker()
        cfg = TrainConfig(**{**CFG.__dict__, "length_window": window})
        train(model, loss="margin", cfg=cfg)
        weights.append(model.state_dict())
    plain, bucketed = weights
    assert not all(torch.allclose(plain[k], bucketed[k], atol=1e-4) for k in plain)


def test_invalid_window_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"'length_window': 0 is out of range \[1, ∞\]"):
        TrainConfig(length_window=0)
