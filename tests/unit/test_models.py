"""Model families (SPEC §5.1): construction, seeds, layer cuts, tokens, save/load round trip,
ecosystem formats, offline loading and the errors a user sees."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import huggingface_hub.constants
import pytest
import torch

from pipeline.models.base import Ranker
from pipeline.models.encoders import encoder_layers
from pipeline.models.registry import build_ranker, get_family, load_ranker
from tests.unit.tiny_rankers import ARCHS, DOCS, QUERIES, tiny_config, tiny_ranker

QIDS, DIDS = ["q0", "q0", "q1"], ["d0", "d2", "d1"]


def _scores(ranker: Ranker) -> torch.Tensor:
    ranker.eval()
    with torch.inference_mode():
        return ranker(QIDS, DIDS)[0]


@pytest.mark.parametrize("arch", ARCHS)
def test_tiny_ranker_scores_and_representation_shapes(arch: str) -> None:
    ranker = tiny_ranker(arch).eval()
    with torch.inference_mode():
        scores, reprs = ranker(QIDS, DIDS)
    assert scores.shape == (3,) and scores.dtype == torch.float32
    assert reprs.shape == (3, ranker.repr_dim) and reprs.dtype == torch.float32
    assert ranker.repr_dim == (16 if arch == "late_interaction" else 32)
    assert ranker.encoder.config.num_hidden_layers == 2
    assert torch.isfinite(scores).all()


@pytest.mark.parametrize("arch", ARCHS)
def test_seed_controls_initialisation(arch: str) -> None:
    a = build_ranker(tiny_config(arch), seed=0).state_dict()
    b = build_ranker(tiny_config(arch), seed=0).state_dict()
    c = build_ranker(tiny_config(arch), seed=1).state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert any(not torch.equal(a[k], c[k]) for k in a)


def test_n_layers_truncates_the_encoder() -> None:
    ranker = build_ranker(tiny_config(n_layers=1))
    assert len(encoder_layers(ranker.encoder)) == 1
    assert ranker.encoder.config.num_hidden_layers == 1
    with pytest.raises(ValueError, match=r"model.n_layers must be in 1..2"):
        build_ranker(tiny_config(n_layers=3))


@pytest.mark.parametrize("arch", ARCHS)
def test_train_layers_freezes_everything_below_the_top_layers(arch: str) -> None:
    ranker = build_ranker(tiny_config(arch, train_layers=1))
    trained = {n for n, p in ranker.named_parameters() if p.requires_grad}
    assert trained and all(".layer.0." not in n and "embeddings" not in n for n in trained)
    assert any(".layer.1." in n for n in trained)
    head = {"cross_encoder": "classifier", "late_interaction": "projection"}.get(arch)
    assert head is None or any(n.startswith(head) or f".{head}." in n for n in trained)
    with pytest.raises(ValueError, match=r"'model.train_layers': 3 is out of range 1..2"):
        build_ranker(tiny_config(arch, train_layers=3))


def test_unknown_family_suggests_the_close_one() -> None:
    with pytest.raises(ValueError, match=r"unknown model.arch 'bi-encoder'.*'bi_encoder'\?"):
        get_family("bi-encoder")


def test_cross_encoder_pair_respects_the_budget_and_special_tokens() -> None:
    """``[CLS] q[:q_len] [SEP] d[:max_len − len(q) − 3] [SEP]``, token types 0 then 1."""
    queries = {"short": "hair loss", "long": " ".join(["women"] * 50)}
    docs = {"short": "men and women", "long": " ".join(["doctor"] * 400)}
    ranker = build_ranker(tiny_config(max_len=24, q_len=8))
    ranker.bind(queries, docs)
    tok = ranker.tokenizer
    cls_id, sep_id = tok.cls_token_id, tok.sep_token_id
    keys = [("p", q, d) for q in queries for d in docs]
    for key, (ids, types) in zip(keys, ranker.tokens(keys, ranker.make_tokens), strict=True):
        n_q = types.count(0) - 2
        assert len(ids) == len(types) <= 24 and n_q <= 8
        assert ids[0] == cls_id and ids[n_q + 1] == sep_id and ids[-1] == sep_id
        assert ids.count(cls_id) == 1 and ids.count(sep_id) == 2
        assert types == [0] * (n_q + 2) + [1] * (len(ids) - n_q - 2)
        if key[2] == "long":  # a long passage fills the remaining budget exactly
            assert len(ids) == 24
    [(ids, _)] = ranker.tokens([("p", "short", "short")], ranker.make_tokens)
    q = tok("hair loss", add_special_tokens=False)["input_ids"]
    d = tok("men and women", add_special_tokens=False)["input_ids"]
    assert ids == [cls_id, *q, sep_id, *d, sep_id]


@pytest.mark.slow
@pytest.mark.parametrize("arch", ARCHS)
def test_token_ids_are_kept_only_for_a_frozen_bottom(arch: str) -> None:
    """Paper scale trains every layer: a cache of every pair's token ids would grow by
    ~4.7 KiB a pair (15 GiB an epoch of 3M triples), so only ``train_layers`` keeps one."""
    full = tiny_ranker(arch).train()
    full(QIDS, DIDS)[0].sum().backward()
    assert full._tokens == {}
    frozen = tiny_ranker(arch, train_layers=1).train()
    frozen(QIDS, DIDS)
    keys = set(frozen.sequence_keys(QIDS, DIDS))  # the cache is shared in a process:
    assert keys <= set(frozen._tokens) and keys <= set(frozen._bottom)  # other tests add keys


@pytest.mark.parametrize("arch", ["bi_encoder", "late_interaction"])
def test_single_encoders_truncate_queries_to_q_len_and_documents_to_max_len(arch: str) -> None:
    ranker = build_ranker(tiny_config(arch, max_len=24, q_len=8))
    ranker.bind({"q": " ".join(["women"] * 50)}, {"d": " ".join(["doctor"] * 400), "e": "men"})
    keys = [("q", "q"), ("d", "d"), ("d", "e")]
    (q_ids, _), (d_ids, _), (e_ids, _) = ranker.tokens(keys, ranker.make_tokens)
    tok = ranker.tokenizer
    assert len(q_ids) == 8 and len(d_ids) == 24
    assert q_ids[0] == d_ids[0] == tok.cls_token_id and q_ids[-1] == tok.sep_token_id
    assert e_ids == tok("men")["input_ids"]


@pytest.mark.parametrize("arch", ARCHS)
def test_save_load_round_trip_gives_identical_scores(arch: str, tmp_path: Path) -> None:
    ranker = tiny_ranker(arch, seed=3, n_layers=1, temperature=0.5)
    out = ranker.save(tmp_path / "model")
    ranker.save(out)  # overwriting an existing directory works
    loaded = load_ranker(out)
    loaded.bind(QUERIES, DOCS)
    assert type(loaded) is type(ranker)
    assert loaded.encoder.config.num_hidden_layers == 1
    assert loaded.cfg.max_len == 32 and loaded.cfg.families.keys() == {arch}
    assert loaded.settings == ranker.settings  # the family's own settings, saved and read
    assert getattr(loaded.settings, "temperature", 0.5) == 0.5
    torch.testing.assert_close(_scores(loaded), _scores(ranker), atol=1e-6, rtol=1e-6)
    meta = json.loads((out / "ranker.json").read_text())
    assert meta["arch"] == arch and meta["config"]["name"] == "tiny-random-bert"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]  # no temp leftovers


def test_load_ranker_rejects_other_directories(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="not a trained model directory"):
        load_ranker(tmp_path)


def test_saved_bi_encoder_is_a_sentence_transformer(tmp_path: Path) -> None:
    """``SentenceTransformer(path)`` embeds like ours: its similarity × 1/τ is our score."""
    sentence_transformers = pytest.importorskip("sentence_transformers")
    ranker = tiny_ranker("bi_encoder", temperature=0.05)
    ranker.save(tmp_path / "bi")
    st = sentence_transformers.SentenceTransformer(str(tmp_path / "bi"), device="cpu")
    q = st.encode([QUERIES[i] for i in QIDS], convert_to_tensor=True)
    d = st.encode([DOCS[i] for i in DIDS], convert_to_tensor=True)
    theirs = (q * d).sum(-1) / 0.05  # normalised embeddings: the cosine
    torch.testing.assert_close(theirs, _scores(ranker), atol=1e-4, rtol=1e-4)


def test_saved_cross_encoder_is_a_sentence_transformers_cross_encoder(tmp_path: Path) -> None:
    sentence_transformers = pytest.importorskip("sentence_transformers")
    ranker = tiny_ranker("cross_encoder")
    ranker.save(tmp_path / "ce")
    ce = sentence_transformers.CrossEncoder(str(tmp_path / "ce"), device="cpu", max_length=32)
    pairs = [(QUERIES[q], DOCS[d]) for q, d in zip(QIDS, DIDS, strict=True)]
    theirs = torch.tensor(ce.predict(pairs), dtype=torch.float32)
    torch.testing.assert_close(theirs, _scores(ranker), atol=1e-5, rtol=1e-5)


def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


def test_minilm_loads_offline_from_package(monkeypatch: pytest.MonkeyPatch) -> None:
    _offline(monkeypatch)

    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"network access while loading the shipped model: {args}")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    cfg = tiny_config("bi_encoder", name="all-MiniLM-L6-v2", n_layers=2, dim=128)
    ranker = build_ranker(cfg)
    assert len(encoder_layers(ranker.encoder)) == 2 and ranker.repr_dim == 384
    ranker.bind(QUERIES, DOCS)
    scores = _scores(ranker)
    assert torch.isfinite(scores).all() and scores.abs().max() <= 1.0 + 1e-6  # cosines, τ = 1


def test_unknown_hub_id_offline_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    _offline(monkeypatch)
    with pytest.raises(
        RuntimeError,
        match=r"(?s)'no-such-org/no-such-model' could not be downloaded.*"
        r"needs network.*'model.name'.*'all-MiniLM-L6-v2'.*'tiny-random-bert'",
    ):
        build_ranker(tiny_config(name="no-such-org/no-such-model"))
