"""Late interaction (ColBERT, SPEC §5.1): ``s = Σ_i max_j cos(q_i, d_j) / τ``.

Token embeddings of the shared encoder are projected to ``model.late_interaction.dim`` (a
linear map without bias, seeded) and L2-normalised; the score sums, over the query's tokens,
the best cosine with any document token, divided by ``model.late_interaction.temperature``.
The document representation (for the AdvBERT adversary) is the mean of the document's token
embeddings. At reranking each document's token embeddings are computed once. Saved as a
transformers encoder directory plus ``colbert_linear.safetensors`` (the projection) and
``ranker.json``; :func:`pipeline.models.registry.load_ranker` loads it.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from pipeline.config import Checked, Range
from pipeline.models.bi_encoder import index
from pipeline.models.family import Family, importable

if TYPE_CHECKING:
    from torch import Tensor
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

    from pipeline.models.base import Ranker
    from pipeline.sections import ModelParams

PROJECTION_FILE = "colbert_linear.safetensors"


@dataclass(frozen=True)
class LateInteractionConfig(Checked):
    """The ``model.late_interaction`` section: ``temperature`` τ (> 0) that divides the
    MaxSim score and ``dim``, the size of the projected token embeddings."""

    temperature: Annotated[float, Range(gt=0)] = 0.5
    dim: Annotated[int, Range(ge=1)] = 128


@functools.cache
def ranker() -> type[Ranker]:
    """The late-interaction ranker class (torch is imported here, not when params load)."""
    import torch
    from safetensors.torch import load_file, save_file
    from torch import nn

    from pipeline.models.base import Key, Ranker, Tokens

    class LateInteraction(Ranker):
        arch = "late_interaction"

        def __init__(
            self,
            encoder: PreTrainedModel,
            tokenizer: PreTrainedTokenizerBase,
            cfg: ModelParams,
            seed: int = 0,
        ) -> None:
            super().__init__(encoder, tokenizer, cfg)
            dim = self.settings.dim
            self.projection = nn.Linear(int(encoder.config.hidden_size), dim, bias=False)
            std = float(getattr(encoder.config, "initializer_range", 0.02))
            gen = torch.Generator().manual_seed(seed)
            with torch.no_grad():
                self.projection.weight.normal_(0.0, std, generator=gen)

        @property
        def repr_dim(self) -> int:
            return int(self.settings.dim)

        def make_tokens(self, keys: list[Key]) -> list[Tokens]:
            out = []
            for k in keys:
                kind, i = k[0], k[1]
                text = self.query_text(i) if kind == "q" else self.doc_text(i)
                n = self.cfg.q_len if kind == "q" else self.cfg.max_len
                out.extend(self.single_tokens([text], n))
            return out

        def token_embeddings(self, keys: Sequence[Key]) -> tuple[Tensor, Tensor]:
            """Normalised projected token embeddings ``[n, T, dim]`` and mask ``[n, T]``."""
            hidden, mask = self.encode(keys, self.tokens(keys, self.make_tokens))
            emb = nn.functional.normalize(self.projection(hidden.float()), dim=-1)
            return emb * mask.unsqueeze(-1), mask

        def forward(self, qids: Sequence[str], dids: Sequence[str]) -> tuple[Tensor, Tensor]:
            uq, ud = list(dict.fromkeys(qids)), list(dict.fromkeys(dids))
            eq, mq = self.token_embeddings([("q", q) for q in uq])
            ed, md = self.token_embeddings([("d", d) for d in ud])
            qi, di = index(uq, qids), index(ud, dids)
            scores = maxsim(eq[qi], mq[qi], ed[di], md[di]) / self.settings.temperature
            doc_repr = ed.sum(1) / md.sum(1, keepdim=True).clamp(min=1)
            return scores, doc_repr[di]

        def score_many(self, qids: Sequence[str], dids: Sequence[str], batch_size: int) -> Tensor:
            """Each document's token embeddings are computed once (cached per distinct doc)."""
            uq, ud = list(dict.fromkeys(qids)), list(dict.fromkeys(dids))
            qs = self._embed_all("q", uq, batch_size)
            ds = self._embed_all("d", ud, batch_size)
            qi, di = index(uq, qids).tolist(), index(ud, dids).tolist()
            out = torch.zeros(len(qids))
            for start in range(0, len(qids), batch_size):
                rows = range(start, min(start + batch_size, len(qids)))
                q = nn.utils.rnn.pad_sequence([qs[qi[r]] for r in rows], batch_first=True)
                d = nn.utils.rnn.pad_sequence([ds[di[r]] for r in rows], batch_first=True)
                mq = (q.abs().sum(-1) > 0).long()
                md = (d.abs().sum(-1) > 0).long()
                out[start : start + len(rows)] = maxsim(q, mq, d, md) / self.settings.temperature
            return out

        def _embed_all(self, kind: str, ids: list[str], batch_size: int) -> list[Tensor]:
            keys: list[Key] = [(kind, i) for i in ids]
            toks = self.tokens(keys, self.make_tokens)
            order = sorted(range(len(keys)), key=lambda i: len(toks[i][0]))
            out: list[Tensor] = [torch.zeros(0)] * len(keys)
            for start in range(0, len(order), batch_size):
                chunk = order[start : start + batch_size]
                emb, mask = self.token_embeddings([keys[i] for i in chunk])
                for row, i in enumerate(chunk):
                    out[i] = emb[row, : int(mask[row].sum())].cpu()
            return out

        def extra_state(self) -> dict[str, Tensor]:
            return {"weight": self.projection.weight.detach().cpu().contiguous()}

        def save_files(self, out: Path) -> None:
            save_file(self.extra_state(), str(out / PROJECTION_FILE))

        def load_files(self, path: Path) -> None:
            self.projection.weight.data.copy_(load_file(str(path / PROJECTION_FILE))["weight"])

    return importable(LateInteraction, __name__)


def maxsim(q: Tensor, mq: Tensor, d: Tensor, md: Tensor) -> Tensor:
    """``Σ_i max_j q_i·d_j`` over real query tokens i and real document tokens j, ``[n]``."""
    import torch

    sim = torch.einsum("nqh,ndh->nqd", q, d)
    sim = sim.masked_fill(md.unsqueeze(1) == 0, float("-inf"))
    best = sim.max(-1).values.masked_fill(mq == 0, 0.0)
    return best.sum(-1)


def _make(encoder: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, cfg: ModelParams,
          seed: int) -> Ranker:  # fmt: skip
    """The ranker with its projection seeded by ``seed``."""
    return ranker()(encoder, tokenizer, cfg, seed)  # type: ignore[call-arg]


RECORD = Family(
    "late_interaction",
    ranker,
    "AutoModel",
    "ColBERT late interaction (Khattab & Zaharia, SIGIR 2020): MaxSim over token embeddings",
    config=LateInteractionConfig,
    make=_make,
    usage="`pipeline.models.registry.load_ranker(path)` (ColBERT MaxSim; see docs).",
)


def __getattr__(name: str) -> type[Ranker]:
    """``LateInteraction`` for pickle in a new process (``pipeline.models.family.importable``)."""
    if name == "LateInteraction":
        return ranker()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
