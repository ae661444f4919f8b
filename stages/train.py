"""Stage `train@<method>`: cross-encoder trained on the method's ordered triples and loss."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from pipeline import io, schemas
from pipeline.params import get_method
from pipeline.train.loop import TrainConfig, train_model
from pipeline.train.model import load_model, save_model
from stages.common import run_stage, setup, torch_threads

log = logging.getLogger("stages.train")


def main(argv: Sequence[str] | None = None) -> None:
    ns = setup(__doc__ or "", argv, method=True)
    params, m = ns.params, get_method(ns.params, ns.method)
    torch_threads(params)
    triples = io.read_table(f"data/order/{ns.method}.parquet", schemas.ORDERED_TRIPLES)
    corpus = io.read_table("data/corpus.parquet", schemas.CORPUS)
    queries = io.read_table("data/queries.parquet", schemas.QUERIES)
    doc_scores = io.read_table("data/doc_scores.parquet", schemas.DOC_SCORES)
    tokenizer, model = load_model(params.model.name, params.model.n_layers, params.train.seed)
    t = params.train
    cfg = TrainConfig(
        batch_size=t.batch_size,
        lr=t.lr,
        warmup_ratio=t.warmup_ratio,
        warmup_steps=t.warmup_steps,
        epochs=t.epochs,
        max_len=params.model.max_len,
        q_len=params.model.q_len,
        seed=t.seed,
        max_steps=t.max_steps,
        log_every=t.log_every,
        grad_clip=t.grad_clip,
        device=t.device,
    )
    curve = train_model(
        model,
        tokenizer,
        triples.sort("position"),
        dict(zip(queries["query_id"], queries["text"], strict=True)),
        dict(zip(corpus["doc_id"], corpus["text"], strict=True)),
        doc_scores,
        m.loss,
        m.loss_params(),
        m.psi,
        cfg,
    )
    save_model(model, tokenizer, f"models/{ns.method}")
    io.write_text(curve.write_csv(), f"plots/train/{ns.method}.csv")
    log.info(
        "train@%s: %d logged steps, final loss %.4f", ns.method, curve.height, curve["loss"][-1]
    )


if __name__ == "__main__":
    run_stage(main)
