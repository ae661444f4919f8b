"""Inference-time methods (post-processing, SPEC §6.8): one record per post-processor, keyed
by the ``post.<entry>.processor`` name.

Every public module of this package is one post-processor, named after its key, and defines
``RECORD = PostProcessor(name, fn, Config, paper)``; ``common`` holds the shared pieces. A
``post:`` entry of params.yaml names a processor, the ``base`` method whose runs it re-ranks
and the processor's settings (loaded into its ``Config``); its stage ``post@<entry>`` writes
``runs/<entry>/`` in the layout of a trained method's runs, so ``evaluate@<entry>`` and the
report treat it as a method. This package imports no torch.
"""

from __future__ import annotations

from pipeline.config import collect, lookup
from pipeline.post.common import PostProcessor, attributes

HELPERS = frozenset({"common"})
"""Public modules of this package that are not post-processors."""


def _collect() -> dict[str, PostProcessor]:
    records = collect(__name__, __path__, HELPERS, PostProcessor, "post-processor",
                      same_name=True)  # fmt: skip
    return {r.name: r for _, r in records}


POSTS: dict[str, PostProcessor] = _collect()
"""Every post-processor's record, by name."""
REGISTRY = POSTS
"""This plug-in package's records (``pipeline.plugins``)."""


def get_post(name: str) -> PostProcessor:
    """The record of post-processor ``name``; an unknown name lists the known ones."""
    return lookup(POSTS, name, "post-processor")


__all__ = ["POSTS", "REGISTRY", "PostProcessor", "attributes", "get_post"]
