"""Exported model cards describe their model (pipeline.models.card): which model it is (method,
seed, fold), method, ordering and loss with their settings, the data and query counts used,
which files the metrics come from and what they cover, the reference rows of the same profile
only, Hugging Face's `model-index`, and the model's real output size."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import polars as pl
import pytest
import yaml

from pipeline.models.card import CardError, count, export, main
from tests.unit.tiny_rankers import tiny_ranker

ROOT = Path(__file__).resolve().parents[2]


def _metrics(mrr: float, n: float, gap: float = -0.2, data: str = "d1") -> dict[str, object]:
    return {"MRR@10": mrr, "NFaiRR@10": 0.8, "ARaB-tf@10": 0.01, "gap-mean": gap,
            "gap-male-wins": 0.6, "n_queries": n, "profile": {"data": data}}  # fmt: skip


def _project(root: Path) -> None:
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["dataset"]["grep_biasir"] |= {"folds": 2, "max_queries": 8}
    params["methods"]["penalty_relevant"]["loss"]["penalty"]["lambda"] = 0.25
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    (root / "data").mkdir()
    queries = {"query_id": [str(i) for i in range(8)], "fold": [0, 0, 0, 1, 1, 1, 1, 1]}
    pl.DataFrame(queries | {"split": ["test"] * 8}).write_parquet(root / "data/queries.parquet")
    for row in ("bm25", "zero-shot"):  # every key of a row: eval/<row>/metrics.json
        (root / "eval" / row).mkdir(parents=True)
    seed_dir = root / "eval/penalty_relevant/seed-1"
    seed_dir.mkdir(parents=True)
    (seed_dir / "metrics.json").write_text(json.dumps(_metrics(0.55, 8)))
    mean = _metrics(0.5, 8.0) | {"seeds": [1, 2, 3]}  # a mean over seeds: n_queries 8.0
    (root / "eval/penalty_relevant/metrics.json").write_text(json.dumps(mean))
    (root / "eval/bm25/metrics.json").write_text(json.dumps(_metrics(0.4, 8)))
    # a reference row from another profile (the 117-query default beside an 8-query model)
    (root / "eval/zero-shot/metrics.json").write_text(json.dumps(_metrics(0.9, 117, data="d0")))
    model = tiny_ranker("bi_encoder", train_layers=1).save(
        root / "models" / "penalty_relevant" / "seed-1" / "fold-1"
    )  # the default's train.seeds [1, 2, 3]: the first seed's models are kept
    for f in model.rglob("*"):  # as DVC leaves files it links from its cache: read-only
        if f.is_file():
            os.chmod(f, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)


def test_exported_card_describes_its_model(tmp_path: Path) -> None:
    _project(tmp_path)
    out = export("penalty_relevant", 1, tmp_path / "export", root=tmp_path)
    text = (out / "README.md").read_text()
    assert "This model: seed 1 of `train.seeds` [1, 2, 3] (only the first seed's" in text
    assert "fold 1 of 2 (`models/penalty_relevant/seed-1/fold-1`)" in text
    training = text.split("## Training")[1].split("##")[0]
    assert "ordering: shuffle" in training and "by_query: True" in training
    assert "loss: penalty (docs: relevant, lambda: 0.25, margin: 1.0), psi: bool_abs" in training
    assert "Training: `seed: 1, seeds: [1, 2, 3]" in training and "42" not in training
    assert "`grep-biasir` (`dataset.grep_biasir.max_queries: 8`)" in training
    assert "fold 1 of 2" in training and "trained on 3 queries, tested on 5" in training
    evaluation = text.split("## Evaluation")[1].split("## Bias")[0]
    assert ("`penalty_relevant, seed 1` (eval/penalty_relevant/seed-1/metrics.json): all 2 "
            "fold models of seed 1 pooled over 8 test queries") in evaluation  # fmt: skip
    assert "this model ranked 5 of them" in evaluation
    assert "`penalty_relevant, mean of 3 seeds` (eval/penalty_relevant/metrics.json)" in evaluation
    assert "| penalty_relevant, seed 1 | 0.5500 |" in evaluation
    assert "| penalty_relevant, mean of 3 seeds | 0.5000 |" in evaluation
    assert "| bm25 | 0.4000 |" in evaluation
    assert "| zero-shot |" not in evaluation  # another profile: left out, and said so
    assert "`zero-shot` is left out: `eval/zero-shot/metrics.json` comes from another profile " \
        "(profile.data d0, 117 queries, this model's: profile.data d1, 8 queries)" in evaluation
    risks = text.split("## Bias, risks and limitations")[1]
    assert "ranks 0.20 places below the female version" in risks
    assert "from 8 queries with binary gender labels" in risks
    assert "8.0" not in text and "default data" not in text
    assert (out / "model.safetensors.index.json").is_file()  # the model came along


def test_card_front_matter_has_a_model_index_and_the_real_output_size(tmp_path: Path) -> None:
    _project(tmp_path)
    out = export("penalty_relevant", 1, tmp_path / "export", root=tmp_path)
    text = (out / "README.md").read_text()
    meta = yaml.safe_load(text.split("---\n")[1])
    (entry,) = meta["model-index"]
    assert entry["name"] == "penalty_relevant-seed-1-fold-1"
    (result,) = entry["results"]
    assert result["dataset"] == {"name": "Grep-BiasIR", "type": "grep-biasir",
                                 "split": "test folds of 2-fold cross-validation (8 queries)"}
    assert {"type": "mrr_at_10", "name": "MRR@10", "value": 0.55} in result["metrics"]
    assert "eval/penalty_relevant/seed-1/metrics.json" in result["source"]["name"]
    hidden = json.loads((out / "config.json").read_text())["hidden_size"]
    assert f"Output: one {hidden}-dimensional embedding per text." in text
    config = json.loads(text.split("```json")[1].split("```")[0])
    assert "dim" not in config and config["similarity"] == "cosine"  # late interaction's key


def test_an_unkept_seed_fails_with_one_line_that_says_why_and_how(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _project(tmp_path)
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()  # saving the model drew a progress bar
    assert main(["penalty_relevant", "--fold", "1", "--seed", "2", "--out", "x"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "only the first seed's models are kept" in err
    assert "dvc exp run -S train.keep_models=all train@penalty_relevant" in err
    with pytest.raises(CardError, match=r"trained with the seeds \[1, 2, 3\]"):
        export("penalty_relevant", 1, tmp_path / "e", root=tmp_path, seed=7)
    assert not (tmp_path / "x").exists()


def test_counts_are_written_as_counts() -> None:
    assert (count(117.0), count(117), count(7.5)) == ("117", "117", "7.5")


def test_the_card_a_model_is_saved_with_names_its_method_seed_fold_and_training(
    tmp_path: Path,
) -> None:
    """`train@` writes the card beside each kept fold model (issue 41: it was a stub with no
    method, seed or fold); the numbers are measured later and the card says where."""
    from pipeline.models.card import write_training_card

    _project(tmp_path)
    folder = tmp_path / "models" / "penalty_relevant" / "seed-1" / "fold-1"
    (folder / "README.md").unlink()
    write_training_card(folder, "penalty_relevant", 1, 1, root=tmp_path)
    text = (folder / "README.md").read_text()
    assert "# penalty_relevant (bi_encoder)" in text
    assert "This model: seed 1 of `train.seeds` [1, 2, 3]" in text
    assert "fold 1 of 2 (`models/penalty_relevant/seed-1/fold-1`)" in text
    assert "loss: penalty (docs: relevant, lambda: 0.25, margin: 1.0)" in text
    assert "trained on 3 queries, tested on 5" in text
    assert "`evaluate@penalty_relevant` measures it after training " \
        "(`eval/penalty_relevant/seed-1/metrics.json`)" in text
    other = tmp_path / "models" / "penalty_relevant" / "seed-2" / "fold-0"  # not kept
    shutil.copytree(folder, other, copy_function=shutil.copyfile)
    (other / "README.md").write_text("plain\n")
    write_training_card(other, "penalty_relevant", 0, 2, root=tmp_path)
    assert (other / "README.md").read_text() == "plain\n"
