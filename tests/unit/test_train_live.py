"""Training logs in DVCLive's files (pipeline.train.live): what `dvc plots` and `dvc exp show`
read, one history per fold model, and named values any code records during a step."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import polars as pl
import pytest

from pipeline.train import live
from pipeline.train.groups import prepare_groups
from pipeline.train.loop import TrainConfig, train_model
from pipeline.train.losses.margin import MarginConfig
from tests.unit.tiny_rankers import DOCS, TRIPLES, tiny_ranker


def _tsv(path: Path) -> pl.DataFrame:
    return pl.read_csv(path, separator="\t")


def test_train_log_writes_dvclive_histories_and_summary(tmp_path: Path) -> None:
    log = live.TrainLog(tmp_path / "dvclive" / "m")
    for name, losses in (("fold-0", (1.0, 0.5)), ("seed-2/fold-1", (2.0, 1.0))):
        sink = log.run(name)
        for step, loss in zip((5, 10), losses, strict=True):
            sink(step, {"loss": loss, "lr": 1e-4})
    log.close()
    root = tmp_path / "dvclive" / "m"
    assert _tsv(root / "plots/metrics/fold-0/loss.tsv").to_dicts() == [
        {"step": 5, "loss": 1.0}, {"step": 10, "loss": 0.5}
    ]  # fmt: skip
    assert _tsv(root / "plots/metrics/seed-2/fold-1/lr.tsv")["lr"].to_list() == [1e-4, 1e-4]
    summary = json.loads((root / "metrics.json").read_text())
    assert summary["fold-0"] == {"loss": 0.5, "lr": 1e-4}
    assert summary["seed-2"]["fold-1"]["loss"] == 1.0
    assert summary["loss"] == pytest.approx(0.75)  # mean final loss over the runs
    assert not (root / "dvc.yaml").exists() and not (tmp_path / "dvc.yaml").exists()


def test_record_adds_named_values_to_the_loop_rows(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Code running inside a step (here: the loss) records a value; the row carries its mean
    over the window, and outside training record() is a no-op."""
    from pipeline.train import losses

    live.record("ignored", 1.0)  # outside training: nothing to record into
    record = losses.get_record("margin")
    calls: list[float] = []

    def fn(*args: object) -> object:
        calls.append(float(len(calls)))
        live.record("custom", calls[-1])
        return record.fn(*args)  # type: ignore[arg-type]

    monkeypatch.setitem(losses.LOSSES, "margin", dataclasses.replace(record, fn=fn))
    rows: list[tuple[int, dict[str, float]]] = []
    ranker = tiny_ranker("bi_encoder")
    bias = {"psi": dict.fromkeys(DOCS, 0.0), "zeta": dict.fromkeys(DOCS, 1.0)}
    groups = prepare_groups(TRIPLES, 2, bias)
    cfg = TrainConfig(batch_size=2, lr=1e-3, seed=0, log_every=2)
    objective = (("margin", MarginConfig()),)
    curve = train_model(
        ranker, groups, objective, cfg, log=lambda s, v: rows.append((s, dict(v)))
    )
    assert [s for s, _ in rows] == curve["step"].to_list() == [2, 4]
    assert [v["loss"] for _, v in rows] == pytest.approx(curve["loss"].to_list())
    assert [v["custom"] for _, v in rows] == [0.5, 2.5]  # means of steps (1, 2) and (3, 4)
    assert "ignored" not in rows[0][1]
