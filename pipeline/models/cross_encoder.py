"""Cross-encoder (SPEC §5.2): ``[CLS] query [SEP] passage [SEP]`` → encoder → one-logit head.

A transformers sequence-classification model with one label (for BERT: pooler + linear
classifier), the standard cross-encoder; the query is truncated to ``model.q_len`` tokens and
the passage to the rest of ``model.max_len``. The document representation (AdvBERT) is the
pair's last-layer [CLS] vector. Saved with ``save_pretrained``, so
``sentence_transformers.CrossEncoder(path)`` and ``AutoModelForSequenceClassification`` load
it (the config sets an identity activation, so their scores equal ours). No settings of its
own (``model.cross_encoder: {}``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.errors import InputError
from pipeline.models.family import Family, importable

if TYPE_CHECKING:
    from torch import Tensor

    from pipeline.models.base import Ranker


@functools.cache
def ranker() -> type[Ranker]:
    """The cross-encoder's ranker class (torch is imported here, not when params load)."""
    from pipeline.models.base import Key, Ranker, Tokens

    class CrossEncoder(Ranker):
        arch = "cross_encoder"
        uses_pooler = True  # BERT-style head: pooler → dropout → linear

        def make_tokens(self, keys: list[Key]) -> list[Tokens]:
            tok = self.tokenizer
            qs = tok([self.query_text(k[1]) for k in keys], add_special_tokens=False,
                     truncation=True, max_length=self.cfg.q_len)["input_ids"]  # fmt: skip
            ds = tok([self.doc_text(k[2]) for k in keys], add_special_tokens=False,
                     truncation=True, max_length=self.cfg.max_len)["input_ids"]  # fmt: skip
            cls_id, sep_id = tok.cls_token_id, tok.sep_token_id
            if cls_id is None or sep_id is None:
                raise InputError(f"tokenizer {type(tok).__name__} has no [CLS]/[SEP] token")
            out: list[Tokens] = []
            for q, d in zip(qs, ds, strict=True):
                d = d[: max(self.cfg.max_len - len(q) - 3, 1)]
                ids = [int(cls_id), *q, int(sep_id), *d, int(sep_id)]
                out.append((ids, [0] * (len(q) + 2) + [1] * (len(d) + 1)))
            return out

        def sequence_keys(self, qids: Sequence[str], dids: Sequence[str]) -> list[Key]:
            return [("p", q, d) for q, d in zip(qids, dids, strict=True)]

        def forward(self, qids: Sequence[str], dids: Sequence[str]) -> tuple[Tensor, Tensor]:
            pairs = zip(qids, dids, strict=True)
            keys: list[Key] = list(dict.fromkeys(("p", q, d) for q, d in pairs))
            hidden, _ = self.encode(keys, self.tokens(keys, self.make_tokens))
            scores = self.head(hidden).float()
            pos = {k: i for i, k in enumerate(keys)}
            index = [pos[("p", q, d)] for q, d in zip(qids, dids, strict=True)]
            return scores[index], hidden[index, 0].float()

        def head(self, hidden: Tensor) -> Tensor:
            """The classification head on the last hidden states, ``[n]``."""
            m = self.encoder
            pooler = getattr(m.base_model, "pooler", None)
            if pooler is not None:  # BERT-style: pooler (dense + tanh on [CLS]) → dropout → linear
                out: Tensor = m.classifier(m.dropout(pooler(hidden)))  # type: ignore[operator]
            else:  # ELECTRA/RoBERTa-style heads read the sequence themselves
                out = m.classifier(hidden)  # type: ignore[operator]
            return out.squeeze(-1)

        def save_files(self, out: Path) -> None:
            config = json.loads((out / "config.json").read_text())
            config["sentence_transformers"] = {
                "activation_fn": "torch.nn.modules.linear.Identity"
            }
            (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")

    return importable(CrossEncoder, __name__)


RECORD = Family(
    "cross_encoder",
    ranker,
    "AutoModelForSequenceClassification",
    "monoBERT-style cross-encoder (Nogueira & Cho 2019; OpenMatch recipe, SPEC §5.2)",
    per_text=False,
    auto_kwargs={"num_labels": 1},
    library="sentence-transformers",
    pipeline_tag="text-ranking",
    usage="`sentence_transformers.CrossEncoder(path)` (one logit, identity activation).",
)


def __getattr__(name: str) -> type[Ranker]:
    """``CrossEncoder`` for pickle in a new process (``pipeline.models.family.importable``)."""
    if name == "CrossEncoder":
        return ranker()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
