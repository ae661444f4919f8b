"""Training groups: one query, one positive and up to ``group_size − 1`` negatives.

The ordered triples of a fold are grouped by ``(query_id, pos_doc_id)`` in the order of their
first appearance; each key's negatives are cut into chunks of ``group_size − 1``, and a chunk
takes the training position of its first triple, so an ordering (the curriculum) keeps its
order. ``group_size = 2`` is one group per triple, in the triples' order (the pairwise
recipe). Listwise losses (``neutrality_kl``, ``poe``) read a group as one candidate list
(SPEC §6.3, §6.6); pairwise losses read its ``(pos, neg)`` pairs. The texts of a group are
encoded once per step, however many pairs share them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from itertools import chain

import numpy as np
import polars as pl
import torch
from torch import Tensor

from pipeline.errors import InputError
from pipeline.schemas import GROUPS, PSI_SOURCE, TRIPLE_COLUMNS


@dataclass(frozen=True)
class Groups:
    """Groups of one fold, in training order; per-document tensors are ``[n, group_size]``
    with column 0 the positive and ``mask`` marking real documents."""

    qids: list[str]
    docs: list[list[str]]  # [pos, neg_1, ..]
    bias: dict[str, Tensor]  # psi, zeta (and weak): float32 [n, group_size]
    mask: Tensor  # bool [n, group_size]

    def __len__(self) -> int:
        return len(self.qids)


def make_groups(triples: pl.DataFrame, group_size: int) -> tuple[list[str], list[list[str]]]:
    """``(query ids, [pos, negs..] per group)`` from triples in training order."""
    if group_size < 2:
        raise InputError(
            f"train.group_size must be >= 2 (one positive, one negative); got {group_size}"
        )
    missing = set(TRIPLE_COLUMNS) - set(triples.columns)
    if missing:
        raise InputError(f"triples lack columns {sorted(missing)}; has {triples.columns}")
    chunks: dict[tuple[str, str], list[list[str]]] = {}
    order: list[tuple[tuple[str, str], int]] = []
    per = group_size - 1
    for q, p, n in triples.select(*TRIPLE_COLUMNS).cast(pl.String).iter_rows():
        lists = chunks.setdefault((q, p), [])
        if not lists or len(lists[-1]) == per:
            lists.append([])
            order.append(((q, p), len(lists) - 1))
        lists[-1].append(n)
    qids = [key[0] for key, _ in order]
    docs = [[key[1], *chunks[key][i]] for key, i in order]
    return qids, docs


def doc_bias(
    doc_scores: pl.DataFrame, psi_column: str, groups: pl.DataFrame | None = None
) -> dict[str, dict[str, float]]:
    """``{"psi": Ψ by doc_id, "zeta": ζ by doc_id}``, Ψ = ``|doc_scores[PSI_SOURCE[psi]]|``,
    and with the corpus's ``groups`` (``doc_id, group``) ``"version"``: each document's
    F/M/N version as its index in ``pipeline.schemas.GROUPS`` (F 0, M 1, N 2), −1 where it
    has no single one (``both``, unlabelled): what counterfactual loss terms compare."""
    if psi_column not in PSI_SOURCE:
        raise InputError(f"unknown psi {psi_column!r}; known: {sorted(PSI_SOURCE)}")
    col = PSI_SOURCE[psi_column]
    missing = {"doc_id", col, "neutrality"} - set(doc_scores.columns)
    if missing:
        raise InputError(f"doc_scores lacks columns {sorted(missing)}; has {doc_scores.columns}")
    values = pl.col(col, "neutrality").cast(pl.Float64)
    bad = doc_scores.filter(pl.any_horizontal(values.is_null() | values.is_nan()))
    if bad.height:
        doc_id = bad["doc_id"][0]
        raise InputError(f"doc_scores has a missing/NaN {col} or neutrality for doc_id {doc_id!r}")
    ids = doc_scores["doc_id"].cast(pl.String).to_list()
    psi = doc_scores[col].cast(pl.Float64).abs().to_list()
    zeta = doc_scores["neutrality"].cast(pl.Float64).to_list()
    out = {"psi": dict(zip(ids, psi, strict=True)), "zeta": dict(zip(ids, zeta, strict=True))}
    if groups is not None:
        codes = {g: float(i) for i, g in enumerate(GROUPS)}
        known = {d: codes.get(g, -1.0) for d, g in groups.select("doc_id", "group").iter_rows()}
        out["version"] = {d: known.get(d, -1.0) for d in ids}
    return out


def prepare_groups(
    triples: pl.DataFrame,
    group_size: int,
    bias: Mapping[str, Mapping[str, float]],
    pair_scores: Mapping[str, Mapping[tuple[str, str], float]] | None = None,
) -> Groups:
    """Groups with per-document Ψ/ζ (``bias``: name → doc_id → value) and optional
    per-pair values (``pair_scores``: name → (query_id, doc_id) → value, e.g. EqualizeIR's
    weak-learner scores). Unknown documents raise errors naming them."""
    qids, docs = make_groups(triples, group_size)
    lengths = np.fromiter(map(len, docs), dtype=np.int64, count=len(docs))
    mask = np.arange(group_size) < lengths[:, None]  # row-major: the flat order of docs
    flat = list(chain.from_iterable(docs))
    tensors = {}
    for name, table in bias.items():
        missing = next((d for d in flat if d not in table), None)
        if missing is not None:
            raise InputError(f"doc_id {missing!r} of the triples has no row in doc_scores")
        tensors[name] = _spread([table[d] for d in flat], mask)
    if pair_scores:
        pairs = list(zip(np.repeat(np.asarray(qids, dtype=object), lengths), flat, strict=True))
        for name, scores in pair_scores.items():
            absent = next((qd for qd in pairs if qd not in scores), None)
            if absent is not None:
                raise InputError(f"no {name} score for query {absent[0]!r}, doc {absent[1]!r} "
                                 "of the triples")  # fmt: skip
            tensors[name] = _spread([scores[qd] for qd in pairs], mask)
    return Groups(qids, docs, tensors, torch.from_numpy(mask))


def _spread(values: list[float], mask: np.ndarray) -> Tensor:
    """Float32 ``[n, group_size]``: ``values`` in the mask's places (row-major), 0 elsewhere."""
    out = np.zeros(mask.shape, dtype=np.float32)
    out[mask] = values
    return torch.from_numpy(out)


def base_names(needs: Collection[str]) -> set[str]:
    """Per-document tensor names behind a loss record's batch keys (``psi_pos`` → ``psi``)."""
    return {key.removesuffix("_pos").removesuffix("_neg") for key in needs}


def pair_batch(
    groups: Groups, idx: list[int], scores: Tensor, needs: Collection[str] | None = None
) -> tuple[Tensor, Tensor, dict[str, Tensor]]:
    """Flatten the groups ``idx`` (scores ``[len(idx), group_size]``) into their pairs:
    ``(s_pos [P], s_neg [P], batch)`` with ``group``/``slot`` (which group, which negative)
    for listwise losses, ``query`` (which of the batch's queries, numbered in order of first
    appearance: the versions of a document are the positives of one query's groups) and
    ``<name>_pos``/``<name>_neg`` per pair for the tensors a loss ``needs`` (its record's
    batch keys; ``None``: every tensor of ``groups``)."""
    mask = groups.mask[idx].to(scores.device)
    g, j = mask[:, 1:].nonzero(as_tuple=True)
    qids = [groups.qids[i] for i in idx]
    number = {q: n for n, q in enumerate(dict.fromkeys(qids))}
    query = torch.tensor([number[q] for q in qids], dtype=torch.long, device=scores.device)
    batch = {"group": g, "slot": j, "query": query[g]}
    names = set(groups.bias) if needs is None else base_names(needs)
    missing = names - set(groups.bias)
    if missing:
        raise InputError(
            f"the loss needs per-document {sorted(missing)}, which the training groups lack "
            f"(they carry {sorted(groups.bias)}); pass them to prepare_groups"
        )
    for name in sorted(names):
        t = groups.bias[name][idx].to(scores.device)
        batch[f"{name}_pos"], batch[f"{name}_neg"] = t[g, 0], t[g, j + 1]
    return scores[g, 0], scores[g, j + 1], batch
