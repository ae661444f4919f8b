"""The ``train`` section of params.yaml as the trainer's typed config (no torch import).

Defined with the other fixed sections (``pipeline.sections``), below ``pipeline.params`` and
the trainer, so that the import graph flows one way; imported here under its old name.
"""

from __future__ import annotations

from pipeline.sections import TrainConfig

__all__ = ["TrainConfig"]
