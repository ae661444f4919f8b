"""Bi-encoder (DPR-style, SPEC §5.1): one shared encoder, mean pooling, ``s = sim(q, d) / τ``.

Query and document are encoded separately, pooled as all-MiniLM-L6-v2 was trained (mean over
non-padding tokens) and compared by cosine (``model.bi_encoder.similarity: cosine``) or dot
product, divided by ``model.bi_encoder.temperature``. At reranking every distinct query and
document is encoded once. Saved as a sentence-transformers directory (Transformer →
Pooling(mean) [→ Normalize]), so ``SentenceTransformer(path)`` loads it and its similarity
equals ours times τ.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

from pipeline.config import Checked, Range
from pipeline.models.family import Family, importable

if TYPE_CHECKING:
    from torch import Tensor

    from pipeline.models.base import Ranker


@dataclass(frozen=True)
class BiEncoderConfig(Checked):
    """The ``model.bi_encoder`` section: ``similarity`` (``cosine`` or ``dot``) and the
    ``temperature`` τ (> 0) that divides it."""

    similarity: Literal["cosine", "dot"] = "cosine"
    temperature: Annotated[float, Range(gt=0)] = 0.5


def mean_pool(hidden: Tensor, mask: Tensor) -> Tensor:
    """Mean of the hidden states over the non-padding positions, ``[n, h]``."""
    m = mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)


@functools.cache
def ranker() -> type[Ranker]:
    """The bi-encoder's ranker class (torch is imported here, not when params load)."""
    import torch

    from pipeline.models.base import Key, Ranker, Tokens

    class BiEncoder(Ranker):
        arch = "bi_encoder"

        def make_tokens(self, keys: list[Key]) -> list[Tokens]:
            out: list[Tokens] = []
            for kind in ("q", "d"):
                ks = [k for k in keys if k[0] == kind]
                if not ks:
                    continue
                texts = [self.query_text(k[1]) if kind == "q" else self.doc_text(k[1]) for k in ks]
                length = self.cfg.q_len if kind == "q" else self.cfg.max_len
                out.extend(self.single_tokens(texts, length))
            order = [k for kind in ("q", "d") for k in keys if k[0] == kind]
            by_key = dict(zip(order, out, strict=True))
            return [by_key[k] for k in keys]

        def embed(self, keys: Sequence[Key]) -> Tensor:
            """Pooled (and, for cosine, normalised) embeddings ``[n, h]`` of query/doc keys."""
            hidden, mask = self.encode(keys, self.tokens(keys, self.make_tokens))
            pooled = mean_pool(hidden.float(), mask)
            if self.settings.similarity == "cosine":
                pooled = torch.nn.functional.normalize(pooled, dim=-1)
            return pooled

        def forward(self, qids: Sequence[str], dids: Sequence[str]) -> tuple[Tensor, Tensor]:
            uq, ud = list(dict.fromkeys(qids)), list(dict.fromkeys(dids))
            emb = self.embed([("q", q) for q in uq] + [("d", d) for d in ud])
            eq, ed = emb[: len(uq)], emb[len(uq) :]
            q, d = eq[index(uq, qids)], ed[index(ud, dids)]
            return (q * d).sum(-1) / self.settings.temperature, d

        def score_many(self, qids: Sequence[str], dids: Sequence[str], batch_size: int) -> Tensor:
            """Each distinct query and document is encoded once, in length-sorted batches."""
            uq, ud = list(dict.fromkeys(qids)), list(dict.fromkeys(dids))
            eq, ed = self._embed_all("q", uq, batch_size), self._embed_all("d", ud, batch_size)
            q, d = eq[index(uq, qids)], ed[index(ud, dids)]
            return (q * d).sum(-1) / self.settings.temperature

        def _embed_all(self, kind: str, ids: list[str], batch_size: int) -> Tensor:
            keys: list[Key] = [(kind, i) for i in ids]
            toks = self.tokens(keys, self.make_tokens)
            order = sorted(range(len(keys)), key=lambda i: len(toks[i][0]))
            out = torch.zeros(len(keys), self.repr_dim)
            for start in range(0, len(order), batch_size):
                chunk = order[start : start + batch_size]
                out[torch.tensor(chunk)] = self.embed([keys[i] for i in chunk]).cpu()
            return out

        def save_files(self, out: Path) -> None:
            cosine = self.settings.similarity == "cosine"
            modules = [
                {"idx": 0, "name": "0", "path": "",
                 "type": "sentence_transformers.models.Transformer"},
                {"idx": 1, "name": "1", "path": "1_Pooling",
                 "type": "sentence_transformers.models.Pooling"},
            ]  # fmt: skip
            if cosine:
                modules.append({"idx": 2, "name": "2", "path": "2_Normalize",
                                "type": "sentence_transformers.models.Normalize"})  # fmt: skip
                (out / "2_Normalize").mkdir()
            (out / "1_Pooling").mkdir()
            pooling = {"word_embedding_dimension": self.repr_dim, "pooling_mode_mean_tokens": True}
            _write(out / "1_Pooling" / "config.json", pooling)
            _write(out / "modules.json", modules)
            _write(out / "sentence_bert_config.json",
                   {"max_seq_length": self.cfg.max_len, "do_lower_case": False})  # fmt: skip
            _write(out / "config_sentence_transformers.json",
                   {"similarity_fn_name": "cosine" if cosine else "dot"})  # fmt: skip

    return importable(BiEncoder, __name__)


def index(unique: list[str], ids: Sequence[str]) -> Tensor:
    """Positions of ``ids`` in ``unique`` as a long tensor."""
    import torch

    pos = {x: i for i, x in enumerate(unique)}
    return torch.tensor([pos[x] for x in ids], dtype=torch.long)


def _write(path: Path, obj: object) -> None:
    path.write_text(json.dumps(obj, indent=2) + "\n")


RECORD = Family(
    "bi_encoder",
    ranker,
    "AutoModel",
    "DPR-style bi-encoder (Karpukhin et al., EMNLP 2020), mean pooling as all-MiniLM-L6-v2",
    config=BiEncoderConfig,
    library="sentence-transformers",
    pipeline_tag="sentence-similarity",
    usage="`sentence_transformers.SentenceTransformer(path)` (cosine similarity).",
)


def __getattr__(name: str) -> type[Ranker]:
    """``BiEncoder`` for pickle in a new process (``pipeline.models.family.importable``)."""
    if name == "BiEncoder":
        return ranker()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
