"""What every model family shares: text lookup, tokenisation, a frozen-bottom cache, saving.

A :class:`Ranker` scores ``(query_id, doc_id)`` pairs after :meth:`Ranker.bind` has given it
the texts. Families (``pipeline/models/<arch>.py``) say how a pair becomes a score and which
vector is the document's representation (read by the AdvBERT adversary, SPEC §5.1).

``model.train_layers = k`` trains only the top ``k`` transformer layers (and the family's
head): the hidden states below them never change, so they are computed once per distinct
sequence (:meth:`Ranker.encode`) and every optimiser step runs only the top ``k`` layers.
``null`` trains every layer (full fine-tuning, the GPU setting).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import torch
from torch import Tensor, nn
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from pipeline.errors import InputError, is_disk_full
from pipeline.io import disk_full
from pipeline.models.card import card
from pipeline.models.encoders import encoder_layers
from pipeline.models.storage import split_frozen

if TYPE_CHECKING:
    from pipeline.sections import ModelParams

logger = logging.getLogger(__name__)


META_FILE = "ranker.json"
FORMAT_VERSION = 3
"""``ranker.json``: ``config`` (the shared ``model`` keys) and ``settings`` (the family's own,
``model.<arch>``); format 2 kept every family's keys flat in ``config`` (still read)."""
Key = tuple[str, ...]  # ("q", query_id) | ("d", doc_id) | ("p", query_id, doc_id)
Tokens = tuple[list[int], list[int]]  # input ids, token type ids


class Ranker(nn.Module):
    """A scoring model over ``(query_id, doc_id)`` pairs; see the module docstring."""

    arch: ClassVar[str]
    uses_pooler: ClassVar[bool] = False  # whether the family's score reads encoder.pooler

    def __init__(
        self, encoder: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, cfg: ModelParams
    ) -> None:
        super().__init__()
        self.encoder = encoder
        self.tokenizer = tokenizer
        self.cfg = cfg  # the shared `model` keys (max_len, q_len, …)
        self.settings: Any = cfg.settings  # the family's own, `model.<arch>`
        fix_tokenizer_settings(tokenizer, cfg.max_len)
        self.base = cfg.name  # the pretrained checkpoint it started from
        self.queries: Mapping[str, str] = {}
        self.docs: Mapping[str, str] = {}
        self._tokens: dict[Key, Tokens] = {}
        self._bottom: dict[Key, Tensor] = {}
        self.encoded = 0  # sequences run through the encoder (tests count them)
        n = len(encoder_layers(encoder))
        k = cfg.train_layers
        if k is not None and not 1 <= k <= n:
            raise InputError(
                f"params key 'model.train_layers': {k} is out of range 1..{n} (the encoder has "
                f"{n} layers after model.n_layers); use null to train every layer"
            )
        self.cut = 0 if k is None else n - k
        pooler = getattr(encoder.base_model, "pooler", None)
        if pooler is not None and not self.uses_pooler:
            pooler.requires_grad_(False)  # unused: no gradient (DDP rejects unused parameters)
        if self.cut:
            base: Any = encoder.base_model
            for p in base.embeddings.parameters():
                p.requires_grad_(False)
            for layer in encoder_layers(encoder)[: self.cut]:
                for p in layer.parameters():
                    p.requires_grad_(False)

    # -- family interface ---------------------------------------------------------------
    @property
    def repr_dim(self) -> int:
        """Size of the document representation that :meth:`forward` returns."""
        return int(self.encoder.config.hidden_size)

    def forward(self, qids: Sequence[str], dids: Sequence[str]) -> tuple[Tensor, Tensor]:
        """``(scores [n] float32, document representations [n, repr_dim])`` of the pairs."""
        raise NotImplementedError

    def score_many(self, qids: Sequence[str], dids: Sequence[str], batch_size: int) -> Tensor:
        """Scores of many pairs at inference (no gradients); families may share work."""
        out = [
            self(qids[i : i + batch_size], dids[i : i + batch_size])[0]
            for i in range(0, len(qids), batch_size)
        ]
        return torch.cat(out) if out else torch.zeros(0)

    def extra_state(self) -> dict[str, Tensor]:
        """Family weights outside the encoder that :meth:`save` must keep."""
        return {}

    def save_files(self, out: Path) -> None:
        """Family-specific files beside the encoder (ecosystem formats)."""

    def load_files(self, path: Path) -> None:
        """Read back what :meth:`save_files` wrote beside the encoder (a saved model)."""

    # -- texts and tokens ---------------------------------------------------------------
    def bind(self, queries: Mapping[str, str], docs: Mapping[str, str]) -> None:
        """Give the ranker the texts behind the ids it will score.

        Token ids and frozen-bottom states are cached per text; rankers with the same frozen
        bottom (its weights' fingerprint: a seeded random encoder differs per seed), layer cut
        and lengths bound to the same text tables share one cache in a process (the folds and
        seeds of a method), so each text's bottom runs once.
        """
        self.queries, self.docs = queries, docs
        if not self.cut:
            self._tokens, self._bottom = {}, {}
            return
        cfg = self.cfg
        key = (self.arch, self.bottom_fingerprint(), self.cut, cfg.max_len, cfg.q_len,
               id(queries), id(docs))  # fmt: skip
        # the entry keeps the tables alive: their ids cannot be reused by other tables
        entry = _SHARED.setdefault(key, ({}, {}, (queries, docs)))
        self._tokens, self._bottom = entry[0], entry[1]

    def bottom_fingerprint(self) -> str:
        """A digest of the frozen bottom's weights (embeddings and the frozen layers): a
        strided sample of every tensor, enough to tell apart two checkpoints or two seeds."""
        base: Any = self.encoder.base_model
        digest = hashlib.blake2b(digest_size=16)
        for module in (base.embeddings, *encoder_layers(self.encoder)[: self.cut]):
            for name, p in sorted(module.state_dict().items()):
                flat = p.detach().reshape(-1)
                sample = flat[:: max(1, flat.numel() // 4096)].float().cpu().numpy()
                digest.update(name.encode() + sample.tobytes())
        return digest.hexdigest()

    def query_text(self, qid: str) -> str:
        if qid not in self.queries:
            raise InputError(f"query_id {qid!r} has no text in data/queries.parquet")
        return self.queries[qid]

    def doc_text(self, did: str) -> str:
        if did not in self.docs:
            raise InputError(f"doc_id {did!r} has no text in data/corpus.parquet")
        return self.docs[did]

    def tokens(
        self, keys: Sequence[Key], make: Callable[[list[Key]], list[Tokens]]
    ) -> list[Tokens]:
        """Token ids of ``keys``, tokenising the ones not seen yet in one call of ``make``.

        They are kept only with a frozen bottom (``train_layers``), whose cached states need
        each text tokenised once. Without one, every call tokenises afresh: a cache of every
        pair seen would hold ~4.7 KiB of Python ints a pair, ~15 GiB after one epoch of MS
        MARCO's 3M triples, to save tokenising them again (a small part of a step)."""
        cache = self._tokens if self.cut else {}
        todo = list(dict.fromkeys(k for k in keys if k not in cache))
        if todo:
            cache.update(zip(todo, make(todo), strict=True))
        return [cache[k] for k in keys]

    def single_tokens(self, texts: list[str], max_len: int) -> list[Tokens]:
        enc = self.tokenizer(texts, truncation=True, max_length=max_len)
        return [(ids, [0] * len(ids)) for ids in enc["input_ids"]]

    # -- encoder --------------------------------------------------------------------------
    def device(self) -> torch.device:
        return next(self.parameters()).device

    def encode(self, keys: Sequence[Key], toks: Sequence[Tokens]) -> tuple[Tensor, Tensor]:
        """Last hidden states ``[n, T, h]`` and attention mask ``[n, T]`` of the sequences.

        In training mode with ``train_layers``, the frozen bottom is computed once per key
        and cached; only the top layers run with gradients. At inference the cached bottom is
        used where every key has one (precomputed features), else the full encoder runs.
        """
        self.encoded += len(keys)
        ids, types, mask = _collate(toks, int(self.tokenizer.pad_token_id or 0), self.device())
        base: Any = self.encoder.base_model
        cached = self.cut and all(k in self._bottom for k in keys)
        if not (self.cut and self.training) and not cached:
            out = base(input_ids=ids, attention_mask=mask, token_type_ids=types)
            return out.last_hidden_state, mask
        missing = [i for i, k in enumerate(keys) if k not in self._bottom]
        if missing:
            self._fill_bottom([keys[i] for i in missing], [toks[i] for i in missing])
        return self._top(keys, mask), mask

    def _top(self, keys: Sequence[Key], mask: Tensor) -> Tensor:
        """The trainable top layers over cached bottom states, run in length-sorted chunks of
        ``TOP_CHUNK`` sequences (a short query is not padded to the longest document)."""
        n, width = mask.shape
        out = torch.zeros(n, width, self.repr_width(), device=mask.device)
        lengths = [int(x) for x in mask.sum(1).tolist()]
        order = sorted(range(n), key=lambda i: lengths[i])
        top = encoder_layers(self.encoder)[self.cut :]
        for start in range(0, n, TOP_CHUNK):
            rows = order[start : start + TOP_CHUNK]
            w = max(lengths[i] for i in rows)
            hidden = torch.zeros(len(rows), w, self.repr_width(), device=mask.device)
            for j, i in enumerate(rows):
                hidden[j, : lengths[i]] = self._bottom[keys[i]]
            chunk = self._layers(hidden, mask[rows, :w], top)
            out = out.index_put((torch.tensor(rows, device=mask.device),),
                                torch.nn.functional.pad(chunk, (0, 0, 0, width - w)))  # fmt: skip
        return out

    def _fill_bottom(self, keys: Sequence[Key], toks: Sequence[Tokens]) -> None:
        """Cache the frozen bottom's states of ``keys`` (a fixed feature extractor: eval mode,
        no dropout, no gradients)."""
        ids, types, mask = _collate(toks, int(self.tokenizer.pad_token_id or 0), self.device())
        base: Any = self.encoder.base_model
        bottom = [base.embeddings, *encoder_layers(self.encoder)[: self.cut]]
        with torch.no_grad(), _eval_mode(bottom):
            h = self._layers(base.embeddings(input_ids=ids, token_type_ids=types), mask,
                             encoder_layers(self.encoder)[: self.cut])  # fmt: skip
        for row, k in enumerate(keys):
            self._bottom[k] = h[row, : int(mask[row].sum())].detach()

    def sequence_keys(self, qids: Sequence[str], dids: Sequence[str]) -> list[Key]:
        """The encoder sequences that scoring these pairs runs (family-specific)."""
        keys: list[Key] = [("q", q) for q in qids]
        return keys + [("d", d) for d in dids]

    def make_tokens(self, keys: list[Key]) -> list[Tokens]:
        raise NotImplementedError

    def warm(self, qids: Sequence[str], dids: Sequence[str], batch_size: int = 64) -> None:
        """Fill the frozen-bottom cache for these pairs in length-sorted batches (much less
        padding than filling it step by step); a no-op without ``train_layers``."""
        for batch in self.warm_batches(qids, dids, batch_size):
            self.fill(batch)

    def warm_batches(
        self, qids: Sequence[str], dids: Sequence[str], batch_size: int = 64
    ) -> list[list[Key]]:
        """The batches :meth:`warm` fills: the sequences of these pairs without cached states,
        sorted by token length, ``batch_size`` at a time (none without ``train_layers``).
        A batch's states do not depend on which process fills it (:meth:`fill`)."""
        if not self.cut:
            return []
        keys = [k for k in dict.fromkeys(self.sequence_keys(qids, dids)) if k not in self._bottom]
        toks = self.tokens(keys, self.make_tokens)
        order = sorted(range(len(keys)), key=lambda i: len(toks[i][0]))
        return [[keys[i] for i in order[start : start + batch_size]]
                for start in range(0, len(order), batch_size)]  # fmt: skip

    def fill(self, keys: Sequence[Key]) -> dict[Key, Tensor]:
        """Compute and cache the frozen bottom's states of the sequences ``keys`` as one
        batch; their states."""
        self._fill_bottom(keys, self.tokens(keys, self.make_tokens))
        return {k: self._bottom[k] for k in keys}

    def features(self) -> dict[Key, Tensor]:
        """The cached frozen-bottom states (what the ``features`` stage saves)."""
        return dict(self._bottom)

    def preload(self, features: Mapping[Key, Tensor]) -> None:
        """Use precomputed frozen-bottom states (from :meth:`features` of a ranker with the
        same checkpoint, layer cut and lengths) instead of computing them."""
        if self.cut:
            self._bottom.update(features)

    def repr_width(self) -> int:
        return int(self.encoder.config.hidden_size)

    def _layers(self, hidden: Tensor, mask: Tensor, layers: nn.ModuleList) -> Tensor:
        base: Any = self.encoder.base_model
        mask4, _ = base._create_attention_masks(
            attention_mask=mask, encoder_attention_mask=None, embedding_output=hidden,
            encoder_hidden_states=None, cache=None,
        )  # fmt: skip
        for layer in layers:
            out = layer(hidden, mask4)
            hidden = out[0] if isinstance(out, tuple) else out
        return hidden

    # -- saving -----------------------------------------------------------------------------
    def trained_names(self) -> set[str]:
        """Names (as in the encoder's ``state_dict``) of the encoder tensors that train."""
        return {n for n, p in self.encoder.named_parameters() if p.requires_grad}

    def save(self, out_dir: str | Path) -> Path:
        """Write the model atomically (temporary sibling directory renamed into place)."""
        out = Path(out_dir)
        tmp = out.parent / f".{out.name}.tmp-{uuid.uuid4().hex[:8]}"
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            tmp.mkdir()
            self.encoder.save_pretrained(str(tmp))
            if self.cut:  # the frozen bottom in a shard of its own (pipeline.models.storage)
                split_frozen(tmp, self.trained_names())
            fix_tokenizer_settings(self.tokenizer, self.cfg.max_len)  # undo tokenising's changes
            self.tokenizer.save_pretrained(str(tmp))
            self.save_files(tmp)
            meta = {"format": FORMAT_VERSION, "arch": self.arch, "config": self.cfg.common(),
                    "settings": asdict(self.settings), "base": self.base}  # fmt: skip
            (tmp / META_FILE).write_text(json.dumps(meta, indent=2) + "\n")
            (tmp / "README.md").write_text(card(meta, folder=tmp))
            _replace_dir(tmp, out)
        except Exception as e:  # safetensors, transformers and json each report ENOSPC their way
            if not is_disk_full(e):
                raise
            raise disk_full(out, self.saved_size(), error=e) from e
        finally:
            if tmp.exists():
                shutil.rmtree(tmp)
        return out

    def saved_size(self) -> int:
        """About the bytes :meth:`save` writes: the weights, plus 2 MiB for the tokenizer and
        the small JSON files."""
        tensors = [*self.encoder.state_dict().values(), *self.extra_state().values()]
        return sum(t.numel() * t.element_size() for t in tensors) + 2 * 2**20


def fix_tokenizer_settings(tokenizer: PreTrainedTokenizerBase, max_len: int) -> None:
    """Set the truncation (``max_len`` tokens) and padding (none) that ``tokenizer.json`` saves.

    A fast tokenizer keeps the truncation and padding of its last call in its backend, and
    ``save_pretrained`` writes whatever they are: the saved model would then depend on which
    text was tokenised last (a run resumed after its final checkpoint tokenises nothing and
    saved the checkpoint's shipped ``max_length`` 128 with fixed padding). The ranker fixes
    them when it is built and again just before saving, so the saved directory is a function
    of the training inputs only. Every call of the ranker passes its own lengths."""
    backend = getattr(tokenizer, "_tokenizer", None)
    if backend is None:  # a slow (pure Python) tokenizer keeps no such state
        return
    backend.no_padding()
    backend.enable_truncation(
        max_length=max_len, stride=0, strategy="longest_first",
        direction=getattr(tokenizer, "truncation_side", "right"),
    )  # fmt: skip


TOP_CHUNK = 8
_SHARED: dict[
    tuple[object, ...],
    tuple[dict[Key, Tokens], dict[Key, Tensor], tuple[Mapping[str, str], Mapping[str, str]]],
] = {}


@contextlib.contextmanager
def _eval_mode(modules: Sequence[nn.Module]) -> Iterator[None]:
    """``modules`` in eval mode (no dropout) inside the block, their modes restored after."""
    modes = [m.training for m in modules]
    for m in modules:
        m.eval()
    try:
        yield
    finally:
        for m, mode in zip(modules, modes, strict=True):
            m.train(mode)


def _collate(
    toks: Sequence[Tokens], pad_id: int, device: torch.device
) -> tuple[Tensor, Tensor, Tensor]:
    width = max(len(t[0]) for t in toks)
    ids = torch.full((len(toks), width), pad_id, dtype=torch.long)
    types = torch.zeros((len(toks), width), dtype=torch.long)
    mask = torch.zeros((len(toks), width), dtype=torch.long)
    for i, (a, b) in enumerate(toks):
        ids[i, : len(a)] = torch.tensor(a)
        types[i, : len(b)] = torch.tensor(b)
        mask[i, : len(a)] = 1
    return ids.to(device), types.to(device), mask.to(device)


def _replace_dir(src: Path, dst: Path) -> None:
    if dst.exists():
        old = dst.parent / f".{dst.name}.old-{uuid.uuid4().hex[:8]}"
        os.replace(dst, old)
        os.replace(src, dst)
        shutil.rmtree(old)
    else:
        os.replace(src, dst)


def read_meta(model_dir: str | Path) -> dict[str, Any]:
    """The ``ranker.json`` of a saved model; a clear error when it is not one."""
    path = Path(model_dir) / META_FILE
    if not path.is_file():
        raise FileNotFoundError(
            f"{Path(model_dir)} is not a trained model directory (no {META_FILE}); run the "
            "train stage"
        )
    meta: dict[str, Any] = json.loads(path.read_text())
    if meta.get("format") == 2:  # every family's keys flat in `config`
        from pipeline.sections import COMMON_MODEL_KEYS

        flat = meta["config"]
        meta["config"] = {k: v for k, v in flat.items() if k in COMMON_MODEL_KEYS}
        meta["settings"] = {k: v for k, v in flat.items() if k not in COMMON_MODEL_KEYS}
    elif meta.get("format") != FORMAT_VERSION:
        raise InputError(f"{path}: format {meta.get('format')!r}, expected {FORMAT_VERSION}")
    return meta
