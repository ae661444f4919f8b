"""Checkpoint/resume: a killed run resumed from its checkpoint ends bit-identical to an
uninterrupted one (CPU, tiny random BERT with dropout, so the RNG state matters too)."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import torch

from pipeline.train import checkpoint, loop
from pipeline.train.loop import TrainConfig
from pipeline.train.losses._adversary import AdversaryTerm
from pipeline.train.losses.adversary import AdversaryConfig
from tests.unit.test_train_loop import ranker, train

ROOT = Path(__file__).resolve().parents[2]
# 2 epochs over 20 triples (5 steps each), capped at 9 steps: the run crosses an epoch, the
# warm-up ends at step 2, and checkpoints (every 2 steps) fall between curve rows (every 3).
CFG = TrainConfig(
    batch_size=4,
    group_size=2,
    lr=1e-3,
    warmup_steps=2,
    epochs=2,
    max_steps=9,
    seed=3,
    log_every=3,
    device="cpu",
)
# the default family's recipe: a bi-encoder training its top layer on cached bottom states,
# with an AdvBERT adversary (its head is part of the checkpoint)
BI = {"arch": "bi_encoder", "train_layers": 1}


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    """Same thread count here and in the subprocess: float reductions then agree bit for bit."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _train(
    cfg: TrainConfig = CFG,
    model: dict[str, Any] | None = None,
    own_cache: bool = False,
    **kw: Any,
) -> tuple[dict[str, torch.Tensor], pl.DataFrame]:
    """Train the tiny ranker (``model``: its config overrides; an ``adversary`` weight adds
    the AdvBERT head) with ``penalty_both``; the final state and the curve. ``own_cache``
    binds copies of the text tables, so no cached bottom states of earlier runs are reused.
    """
    spec = dict(model or {})
    adversary = spec.pop("adversary", None)
    net = ranker(**spec)
    if own_cache:
        net.bind(dict(net.queries), dict(net.docs))
    terms = [] if adversary is None else [AdversaryTerm(net.repr_dim, seed=0)]
    if adversary is not None:
        kw["extra"] = (("adversary", AdversaryConfig(adversary)),)
    curve = train(net, cfg=cfg, terms=terms, **kw)
    state = net.state_dict() | {
        f"adversary.{k}": v for t in terms for k, v in t.state_dict().items()
    }
    return state, curve


def _assert_same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert a.keys() == b.keys()
    differ = [k for k in a if not torch.equal(a[k], b[k])]
    assert not differ, f"{len(differ)} tensors differ, first {differ[:3]}"


SPECS = {"cross": {}, "bi+adv": {**BI, "adversary": 0.5}}
_REFERENCES: dict[str, tuple[dict[str, torch.Tensor], pl.DataFrame]] = {}


def reference(spec: str) -> tuple[dict[str, torch.Tensor], pl.DataFrame]:
    """The uninterrupted run of ``SPECS[spec]``, without any checkpointing (computed once)."""
    if spec not in _REFERENCES:
        torch.set_num_threads(1)
        _REFERENCES[spec] = _train(model=SPECS[spec])
    return _REFERENCES[spec]


@pytest.mark.parametrize("spec", sorted(SPECS))
def test_resume_after_crash_is_bit_identical(
    spec: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    expected = reference(spec)
    real_update, calls = loop._update, [0]

    def crash_in_step_5(*args: Any) -> None:
        real_update(*args)
        calls[0] += 1
        if calls[0] == 5:  # step 5 is done in memory but its checkpoint (step 6) never comes
            raise RuntimeError("simulated crash")

    with monkeypatch.context() as m:
        m.setattr(loop, "_update", crash_in_step_5)
        with pytest.raises(RuntimeError, match="simulated crash"):
            _train(model=SPECS[spec], checkpoint_dir=tmp_path, checkpoint_every=2)
    saved = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    assert saved["step"] == 4 and saved["window"] and saved["rows"][0]["step"] == 3
    assert any(k.startswith("terms.0.head.") for k in saved["model"]) == ("adv" in spec)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="pipeline.train.checkpoint"):
        state, curve = _train(model=SPECS[spec], checkpoint_dir=tmp_path, checkpoint_every=2)
    # one line, at WARNING: the job processes of train.workers log only warnings (issue 43)
    assert [r.getMessage() for r in caplog.records if "resumed" in r.getMessage()] == [
        f"resumed training from step 4 of checkpoint {tmp_path / 'checkpoint.pt'} (saved by "
        "an interrupted run with the same settings and inputs)"
    ]
    _assert_same(state, expected[0])
    assert curve.equals(expected[1]), (curve, expected[1])
    assert curve["step"].to_list() == [3, 6, 9]


def test_checkpoint_of_another_run_is_ignored(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    other = TrainConfig(**{**CFG.__dict__, "max_steps": 2})
    _train(other, checkpoint_dir=tmp_path, checkpoint_every=2)  # a finished 2-step run
    fresh = _train(other.__class__(**{**other.__dict__, "seed": 4}))
    with caplog.at_level(logging.WARNING, logger="pipeline.train.checkpoint"):
        resumed = _train(
            other.__class__(**{**other.__dict__, "seed": 4}),
            checkpoint_dir=tmp_path,
            checkpoint_every=2,
        )
    assert "ignoring checkpoint" in caplog.text and "other settings or inputs" in caplog.text
    _assert_same(resumed[0], fresh[0])


def test_unreadable_checkpoint_names_file_and_fix(tmp_path: Path) -> None:
    (tmp_path / "checkpoint.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(checkpoint.CheckpointError, match=r"checkpoint\.pt: unreadable .*delete it"):
        _train(checkpoint_dir=tmp_path)


@pytest.mark.parametrize("every", [0, -1])
def test_checkpoint_every_must_be_positive(tmp_path: Path, every: int) -> None:
    with pytest.raises(ValueError, match=rf"checkpoint_every must be an integer >= 1.*={every}"):
        _train(checkpoint_dir=tmp_path, checkpoint_every=every)
    with pytest.raises(ValueError, match=r"needs a checkpoint_dir"):
        _train(checkpoint_every=2)


CHILD = """
import os, signal, sys
import torch
torch.set_num_threads(1)
from tests.unit.test_train_checkpoint import SPECS, _train

real_save, calls = torch.save, [0]

def save_then_die(obj, f, *args, **kwargs):
    calls[0] += 1
    if calls[0] == 2:  # the step-4 checkpoint: half written, then SIGKILL
        f.write(b"half a checkpoint")
        f.flush()
        os.kill(os.getpid(), signal.SIGKILL)
    return real_save(obj, f, *args, **kwargs)

torch.save = save_then_die
_train(model=SPECS[sys.argv[2]], checkpoint_dir=sys.argv[1], checkpoint_every=2)
"""


@pytest.mark.slow
@pytest.mark.parametrize("spec", sorted(SPECS))
def test_sigkill_mid_checkpoint_then_resume(spec: str, tmp_path: Path) -> None:
    """The killed run is another process; the resumed run here starts with an empty cache of
    bottom states (bi-encoder), so its cached states come from other batches than the
    reference's: they must not depend on the batch they were computed in."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(CHILD), str(tmp_path), spec],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-3000:]
    leftovers = sorted(p.name for p in tmp_path.iterdir())
    assert leftovers[1:] == ["checkpoint.pt"] and leftovers[0].startswith(".checkpoint.pt.")
    assert torch.load(tmp_path / "checkpoint.pt", weights_only=True)["step"] == 2
    state, curve = _train(
        model=SPECS[spec], own_cache=True, checkpoint_dir=tmp_path, checkpoint_every=2
    )
    expected = reference(spec)
    _assert_same(state, expected[0])
    assert curve.equals(expected[1])
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    checkpoint.clear_checkpoint(tmp_path)
    assert not tmp_path.exists()  # the emptied checkpoint folder goes too
    checkpoint.clear_checkpoint(tmp_path)  # nothing to clear: no error
