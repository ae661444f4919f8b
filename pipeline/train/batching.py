"""Cross-encoder inputs: tokenise every unique text once, build pairs by list concatenation.

A pair is ``[CLS] q[:q_len] [SEP] d[:max_len - len(q) - 3] [SEP]`` with token type 0 for
``[CLS] q [SEP]`` and 1 for ``d [SEP]`` (SPEC §5). ``collate`` pads a batch to its longest
sequence (dynamic padding), which on CPU is several times faster than padding to max_len.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor
from transformers import PreTrainedTokenizerBase

logger = logging.getLogger(__name__)

Pair = tuple[list[int], list[int]]
"""``(input_ids, token_type_ids)`` of one query–passage sequence, unpadded."""

_CHUNK = 4096


def tokenize_texts(
    tokenizer: PreTrainedTokenizerBase,
    texts: Mapping[str, str],
    ids: Iterable[str],
    limit: int,
    kind: str,
) -> dict[str, list[int]]:
    """Token ids (no special tokens, at most ``limit``) of ``texts[id]`` for each unique id.

    An id missing from ``texts`` raises ``ValueError`` naming it; ``kind`` ("query",
    "document") only words the message.
    """
    unique = list(dict.fromkeys(ids))
    for key in unique:
        if key not in texts:
            raise ValueError(
                f"{kind} id {key!r} not found among the {len(texts)} known {kind} texts"
            )
    out: dict[str, list[int]] = {}
    for start in range(0, len(unique), _CHUNK):
        chunk = unique[start : start + _CHUNK]
        encoded = tokenizer(
            [texts[key] or "" for key in chunk],
            add_special_tokens=False,
            truncation=True,
            max_length=max(limit, 1),
        )["input_ids"]
        out.update(zip(chunk, (list(ids_)[:limit] for ids_ in encoded), strict=True))
    return out


@dataclass
class PairEncoder:
    """Builds pair inputs from texts tokenised once per unique query and document id."""

    tokenizer: PreTrainedTokenizerBase
    max_len: int
    q_len: int
    query_tokens: dict[str, list[int]] = field(default_factory=dict)
    doc_tokens: dict[str, list[int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.max_len < 4 or not 1 <= self.q_len <= self.max_len - 3:
            raise ValueError(
                "need max_len >= 4 and 1 <= q_len <= max_len - 3; "
                f"got max_len={self.max_len}, q_len={self.q_len}"
            )
        cls_id, sep_id = self.tokenizer.cls_token_id, self.tokenizer.sep_token_id
        if cls_id is None or sep_id is None:
            raise ValueError(f"tokenizer {type(self.tokenizer).__name__} has no [CLS]/[SEP] token")
        self.cls_id: int = int(cls_id)
        self.sep_id: int = int(sep_id)

    @property
    def pad_id(self) -> int:
        pad = self.tokenizer.pad_token_id
        return int(pad) if pad is not None else 0

    def add(
        self,
        queries: Mapping[str, str],
        docs: Mapping[str, str],
        query_ids: Iterable[str],
        doc_ids: Iterable[str],
    ) -> PairEncoder:
        """Tokenise the ids not seen before; unknown ids raise ``ValueError``."""
        new_q = [q for q in dict.fromkeys(query_ids) if q not in self.query_tokens]
        new_d = [d for d in dict.fromkeys(doc_ids) if d not in self.doc_tokens]
        self.query_tokens.update(
            tokenize_texts(self.tokenizer, queries, new_q, self.q_len, "query")
        )
        self.doc_tokens.update(
            tokenize_texts(self.tokenizer, docs, new_d, self.max_len - 3, "document")
        )
        logger.debug("tokenised %d queries and %d documents", len(new_q), len(new_d))
        return self

    def pair(self, query_id: str, doc_id: str) -> Pair:
        """``([CLS] q [SEP] d [SEP], token types)`` within the ``max_len`` budget."""
        q = self.query_tokens[query_id]
        d = self.doc_tokens[doc_id][: self.max_len - len(q) - 3]
        input_ids = [self.cls_id, *q, self.sep_id, *d, self.sep_id]
        token_types = [0] * (len(q) + 2) + [1] * (len(d) + 1)
        return input_ids, token_types


def collate(pairs: Sequence[Pair], pad_id: int = 0) -> dict[str, Tensor]:
    """Pad to the longest sequence of the batch (dynamic padding).

    Returns int64 tensors ``input_ids``, ``attention_mask`` and ``token_type_ids``.
    """
    if not pairs:
        raise ValueError("cannot collate an empty batch")
    width = max(len(ids) for ids, _ in pairs)
    input_ids = torch.full((len(pairs), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(pairs), width), dtype=torch.long)
    token_types = torch.zeros((len(pairs), width), dtype=torch.long)
    for row, (ids, types) in enumerate(pairs):
        n = len(ids)
        input_ids[row, :n] = torch.tensor(ids, dtype=torch.long)
        attention[row, :n] = 1
        token_types[row, :n] = torch.tensor(types, dtype=torch.long)
    return {"input_ids": input_ids, "attention_mask": attention, "token_type_ids": token_types}
