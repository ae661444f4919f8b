"""Cross-encoder construction, offline loading, truncation and save/load round-trip."""

from __future__ import annotations

import socket
from pathlib import Path

import huggingface_hub.constants
import pytest
import torch
from transformers import PreTrainedTokenizerBase

from pipeline.train.batching import PairEncoder, collate
from pipeline.train.model import (
    encoder_layers,
    load_model,
    load_trained,
    save_model,
)

QUERIES = {"q": "career advice for women"}
DOCS = {"a": "she is a nurse", "b": "he is an engineer at the plant", "c": "the team works well"}


def _inputs(tokenizer: PreTrainedTokenizerBase) -> dict[str, torch.Tensor]:
    enc = PairEncoder(tokenizer, max_len=32, q_len=8).add(QUERIES, DOCS, QUERIES, DOCS)
    return collate([enc.pair("q", d) for d in DOCS], enc.pad_id)


def test_tiny_model_scores_and_cls_shapes() -> None:
    tok, model = load_model("tiny-random-bert", None, seed=0)
    model.eval()
    inputs = _inputs(tok)
    scores, cls = model.forward_with_cls(**inputs)
    assert scores.shape == (3,) and scores.dtype == torch.float32
    assert cls.shape == (3, 32) == (3, model.hidden_size)
    assert torch.equal(model(**inputs), scores)
    assert model.encoder.config.num_hidden_layers == 2


def test_seed_controls_initialisation() -> None:
    a = load_model("tiny-random-bert", None, seed=0)[1].state_dict()
    b = load_model("tiny-random-bert", None, seed=0)[1].state_dict()
    c = load_model("tiny-random-bert", None, seed=1)[1].state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not torch.equal(a["head.weight"], c["head.weight"])


def test_n_layers_truncates_encoder() -> None:
    _, model = load_model("tiny-random-bert", n_layers=1, seed=0)
    assert len(encoder_layers(model.encoder)) == 1 and model.encoder.config.num_hidden_layers == 1
    with pytest.raises(ValueError, match=r"model.n_layers must be in 1..2"):
        load_model("tiny-random-bert", n_layers=3, seed=0)


def test_save_load_round_trip_gives_identical_scores(tmp_path: Path) -> None:
    tok, model = load_model("tiny-random-bert", n_layers=1, seed=3)
    model.eval()
    out = save_model(model, tok, tmp_path / "model")
    save_model(model, tok, out)  # overwriting an existing directory works
    tok2, loaded = load_trained(out)
    _, via_name = load_model(str(out), None, seed=99)  # a trained directory keeps its head
    via_name.eval()
    with torch.inference_mode():
        expected = model(**_inputs(tok))
        assert torch.equal(expected, loaded(**_inputs(tok2)))
        assert torch.equal(expected, via_name(**_inputs(tok2)))
    assert loaded.encoder.config.num_hidden_layers == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]  # no temp leftovers


def test_load_trained_rejects_other_directories(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="not a trained model directory"):
        load_trained(tmp_path)


def test_minilm_loads_offline_from_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)

    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"network access while loading the shipped model: {args}")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    tok, model = load_model("all-MiniLM-L6-v2", n_layers=2, seed=0)
    assert len(encoder_layers(model.encoder)) == 2 and model.hidden_size == 384
    model.eval()
    with torch.inference_mode():
        scores = model(**_inputs(tok))
    assert torch.isfinite(scores).all()


def test_unknown_hub_id_offline_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(
        RuntimeError,
        match=r"(?s)'no-such-org/no-such-model' could not be downloaded.*"
        r"needs network.*'model.name'.*'all-MiniLM-L6-v2'.*'tiny-random-bert'",
    ):
        load_model("no-such-org/no-such-model", None, seed=0)
