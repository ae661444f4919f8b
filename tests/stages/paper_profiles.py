"""The paper-scale profiles the stage tests run, in one place.

`DOC` holds the `-S key=value` settings of docs/paper-scale.md's commands (BERT-mini on the 215
set, the 1,765 set, TREC Fair 2022); `MINIATURE` what the tests change so that they run in a
minute on the miniature ir_datasets cache (`tests/irds_miniature.py`): fewer triples and
candidates, the tiny random BERT, two optimiser steps, two methods.

The values are written with the types the params keys take (`dataset.msmarco_passage.query_set`
a quoted string, `train.lr` with a decimal point: YAML 1.1 reads `3e-6` as a string) and set
straight into params.yaml. Every key is in params.yaml now (issue #25: each source owns its
section `dataset.<source>`), so `dvc exp run -S` takes them. `doc_settings` reads the doc's
commands (named by `EXPERIMENTS`); `test_profiles_are_the_docs` applies them through DVC's own
`-S` code and checks that they give the same validated params as `DOC`, so a command changed in
the doc fails that test until `DOC`, and with it what the stage tests run, follows.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import yaml

from pipeline.report import docs

DOC_PATH = Path(__file__).resolve().parents[2] / "docs" / "paper-scale.md"
EXPERIMENTS = {  # profile -> the `dvc exp run -n NAME` of its command in DOC_PATH
    "msmarco-215": "bert-mini",
    "msmarco-1765": "bert-mini-1765",
    "trec-fair-2022": "trec-fair-2022",
}

BERT_MINI_215 = [
    "dataset.name=msmarco-passage", "dataset.msmarco_passage.n_triples=3000000",
    "dataset.msmarco_passage.query_set='215'", "candidates.top_k=200", "score.tokenizer=reference",
    "model.arch=cross_encoder", "model.train_layers=null", "train.group_size=2",
    "model.name=prajjwal1/bert-mini", "model.max_len=256", "model.q_len=32",
    "train.lr=3.0e-6", "train.batch_size=16", "train.epochs=1", "train.warmup_steps=160000",
    "train.device=auto", "train.length_window=64", "train.checkpoint_every=20000",
    "train.seeds=[1,2,3]",
]  # fmt: skip
DOC: dict[str, list[str]] = {
    "msmarco-215": BERT_MINI_215,
    # docs/paper-scale.md, "The 1,765 query set": the BERT-mini command with these
    "msmarco-1765": [
        *BERT_MINI_215,
        "dataset.msmarco_passage.query_set='1765'",
        "dataset.msmarco_passage.candidates_k=1000",
        "candidates.top_k=1000",
    ],
    "trec-fair-2022": [
        "dataset.name=trec-fair-2022",
        "dataset.trec_fair_2022.docs_per_query=100",
        "dataset.trec_fair_2022.dimensions=[gender_category,page_subcont_regions]",
    ],
}
MINIATURE: dict[str, list[str]] = {
    "msmarco-215": ["dataset.msmarco_passage.n_triples=60", "candidates.top_k=8"],
    "msmarco-1765": [
        "dataset.msmarco_passage.n_triples=60",
        "dataset.msmarco_passage.candidates_k=20",
        "candidates.top_k=8",
    ],
    "trec-fair-2022": ["dataset.trec_fair_2022.docs_per_query=20", "candidates.top_k=10"],
}
TINY_MODEL = [
    "model.name=tiny-random-bert", "model.max_len=64", "model.q_len=16",
    "train.batch_size=4", "train.max_steps=2", "train.warmup_steps=1", "train.threads=1",
    "rerank.batch_size=64", "evaluate.cutoffs=[10]",
]  # fmt: skip
METHODS = {  # as in params.yaml: the baseline, and LWS (it reads the training candidates)
    "baseline": {"ordering": "shuffle", "loss": {"margin": {}}, "psi": "bool_abs"},
    "lws": {"ordering": "lws", "loss": {"margin": {}}, "psi": "bool_abs"},
}


def settings(profile: str) -> list[str]:
    """The profile's `key=value` settings, the doc's first, the miniature's last (they win)."""
    return [*DOC[profile], *MINIATURE[profile], *TINY_MODEL]


def nested(items: list[str]) -> dict[str, Any]:
    """`key=value` settings as a nested params mapping (values parsed as YAML)."""
    out: dict[str, Any] = {}
    for item in items:
        key, value = item.split("=", 1)
        *sections, name = key.split(".")
        node = out
        for section in sections:
            node = node.setdefault(section, {})
        node[name] = yaml.safe_load(value)
    return out


def overrides(profile: str) -> dict[str, Any]:
    """`settings(profile)` as a nested params mapping, with `methods` replaced by `METHODS`."""
    return {"methods": METHODS, **nested(settings(profile))}


def doc_settings(path: Path = DOC_PATH) -> dict[str, list[str]]:
    """The `-S` values of every `dvc exp run -n NAME` command in the doc's `params` blocks."""
    out: dict[str, list[str]] = {}
    for block in docs.parse(path):
        if block.kind != "params":
            continue
        words = shlex.split(block.text.replace("\\\n", " "), comments=True)
        if words[:3] != ["dvc", "exp", "run"] or "-n" not in words:
            continue
        name = words[words.index("-n") + 1]
        out[name] = [words[i + 1] for i, w in enumerate(words[:-1]) if w in ("-S", "--set-param")]
    return out
