"""Thin DVC stage entry points: `python -m stages.<name>` (argparse → params → library → write)."""

# The stages that run no model: they start without importing torch or transformers
# (tests/unit/test_light_imports.py; benchmarks/rehearsal times their start-up).
LIGHT = (
    "stages.extract",
    "stages.score",
    "stages.candidates",
    "stages.order",
    "stages.evaluate",
    "stages.report",
    "stages.audit",
    "stages.curriculum_figure",
    "stages.sweeps",
)
MODEL = ("stages.features", "stages.train", "stages.rerank")
