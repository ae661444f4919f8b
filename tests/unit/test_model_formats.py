"""Trained models load in the tools of their ecosystems (issue: fits the IR ecosystem)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import yaml

from pipeline.models.bi_encoder import BiEncoderConfig
from pipeline.models.registry import build_ranker, load_ranker, model_params
from pipeline.train.groups import prepare_groups
from pipeline.train.loop import TrainConfig, train_model
from pipeline.train.losses.margin import MarginConfig

QUERIES = {"q1": "who cares for the child", "q2": "strong engineer at work"}
DOCS = {
    "d1": "she cares for the child every day",
    "d2": "he fixed the engine at work",
    "d3": "the weather was mild",
    "d4": "an engineer built a strong bridge",
}


def _trained(arch: str, tmp_path: Path) -> Path:
    import polars as pl

    ranker = build_ranker(model_params(arch, name="tiny-random-bert", max_len=32, q_len=8), 3)
    ranker.bind(QUERIES, DOCS)
    triples = pl.DataFrame({"query_id": ["q1", "q2"], "pos_doc_id": ["d1", "d4"],
                            "neg_doc_id": ["d3", "d2"]})  # fmt: skip
    bias = {"psi": dict.fromkeys(DOCS, 0.0), "zeta": dict.fromkeys(DOCS, 1.0)}
    groups = prepare_groups(triples, 2, bias)
    cfg = TrainConfig(batch_size=2, group_size=2, lr=1e-2, seed=0)
    train_model(ranker, groups, (("margin", MarginConfig()),), cfg)
    return ranker.save(tmp_path / arch)


def _ours(path: Path, qids: list[str], dids: list[str]) -> torch.Tensor:
    ranker = load_ranker(path)
    ranker.bind(QUERIES, DOCS)
    with torch.no_grad():
        return ranker.score_many(qids, dids, 8)


@pytest.mark.slow
def test_bi_encoder_is_a_sentence_transformers_model(tmp_path: Path) -> None:
    from sentence_transformers import SentenceTransformer

    path = _trained("bi_encoder", tmp_path)
    st = SentenceTransformer(str(path), device="cpu")
    qids, dids = ["q1", "q1", "q2"], ["d1", "d2", "d4"]
    q = st.encode([QUERIES[i] for i in qids], convert_to_tensor=True)
    d = st.encode([DOCS[i] for i in dids], convert_to_tensor=True)
    theirs = torch.nn.functional.cosine_similarity(q, d) / BiEncoderConfig().temperature
    assert torch.allclose(theirs.cpu(), _ours(path, qids, dids), atol=1e-5)


@pytest.mark.slow
def test_cross_encoder_loads_in_sentence_transformers(tmp_path: Path) -> None:
    from sentence_transformers import CrossEncoder

    path = _trained("cross_encoder", tmp_path)
    ce = CrossEncoder(str(path), device="cpu", max_length=32)
    qids, dids = ["q1", "q2"], ["d1", "d2"]
    theirs = torch.tensor(
        ce.predict([(QUERIES[q], DOCS[d]) for q, d in zip(qids, dids, strict=True)])
    )
    ours = _ours(path, qids, dids)
    assert theirs.shape == ours.shape
    # sentence-transformers does not truncate the query to q_len; these queries are shorter.
    assert torch.allclose(theirs.float(), ours, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["bi_encoder", "cross_encoder", "late_interaction"])
def test_model_card_front_matter_parses(arch: str, tmp_path: Path) -> None:
    path = _trained(arch, tmp_path)
    text = (path / "README.md").read_text()
    head = yaml.safe_load(text.split("---")[1])
    assert head["base_model"] == "tiny-random-bert"
    assert "fairness" in head["tags"]
    assert {"library_name", "pipeline_tag", "license", "datasets"} <= set(head)
    assert "## Bias, risks and limitations" in text
