"""Weight files of a saved ranker: what training did not change in one shard, the rest in another.

With ``model.train_layers = k`` only the top ``k`` layers and the family's head train; the
embeddings and the layers below stay the checkpoint's, bit for bit. :func:`split_frozen`
rewrites the one ``model.safetensors`` that ``save_pretrained`` writes as the two shards of the
Hugging Face sharded format (``model.safetensors.index.json`` names the shard of every tensor):

- ``model-00001-of-00002.safetensors``: every tensor that does not train (embeddings, the
  frozen layers, an unused pooler, buffers). Same tensors, same bytes: it is byte-identical
  across the fold and seed models of every method on one checkpoint, so DVC's
  content-addressed cache holds it once and a hardlink checkout links every model to it.
- ``model-00002-of-00002.safetensors``: the trained tensors (about 7 MB for one
  all-MiniLM-L6-v2 layer in fp32).

The tensors keep their dtype and values (fp32 stays fp32); ``transformers``'
``from_pretrained``, ``sentence_transformers.SentenceTransformer``/``CrossEncoder`` and
``load_ranker`` read the sharded format as they read one file, so scores are bit-identical.
Full fine-tuning (``train_layers: null``) keeps the single file.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Collection
from pathlib import Path

from safetensors import safe_open
from safetensors.torch import save_file

from pipeline.errors import InputError

logger = logging.getLogger(__name__)

SINGLE = "model.safetensors"
INDEX = "model.safetensors.index.json"
FROZEN_SHARD = "model-00001-of-00002.safetensors"
TRAINED_SHARD = "model-00002-of-00002.safetensors"


def split_frozen(model_dir: str | Path, trained: Collection[str]) -> None:
    """Rewrite ``<model_dir>/model.safetensors`` as a frozen and a trained shard (see above).

    ``trained``: the names (as in the encoder's ``state_dict``) of the tensors that trained.
    A directory without the single file (a checkpoint ``save_pretrained`` already sharded) is
    left as it is.
    """
    path = Path(model_dir) / SINGLE
    if not path.is_file():
        logger.warning("%s: no %s; weights left as save_pretrained wrote them", model_dir, SINGLE)
        return
    with safe_open(str(path), framework="pt") as f:
        metadata = f.metadata() or {"format": "pt"}
        tensors = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 (safe_open has no iter)
    missing = sorted(set(trained) - tensors.keys())
    if missing:
        raise InputError(f"{path}: trained tensors {missing[:3]} are not in the saved weights")
    shards = {
        FROZEN_SHARD: {k: v for k, v in tensors.items() if k not in trained},
        TRAINED_SHARD: {k: v for k, v in tensors.items() if k in trained},
    }
    for name, part in shards.items():
        save_file(part, str(Path(model_dir) / name), metadata=metadata)
    total = sum(t.numel() * t.element_size() for t in tensors.values())
    weight_map = {k: name for name, part in shards.items() for k in part}
    index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
    (Path(model_dir) / INDEX).write_text(json.dumps(index, indent=2) + "\n")
    path.unlink()
