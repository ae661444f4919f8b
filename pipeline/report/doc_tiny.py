"""Which documented commands run on the tiny profile, and the profile they run on
(tests/stages/test_docs_commands.py; the markers: pipeline/report/docs.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from pipeline.report.docs import Block

TINY_PROFILE = (
    "`command` blocks (they need the default run's models and runs) and the `dvc exp run` "
    "blocks of `params` run as written in a copy of the tiny reproduction "
    "(tests/data/params_tiny.yaml: 8 Grep-BiasIR queries, a random 2-layer BERT, 3 training "
    "steps), which stands for the default with two changes: `train.seeds: [1]` (the "
    "default's `seed-<n>/` folders, one seed) and as methods exactly those the blocks name "
    "(the tiny profile's entry where it has one, else the default's; the default's first "
    "method, the baseline, first), and as `post:` entries those the blocks name (the tiny "
    "profile's where it has one). A block marked `offline=REGEX` needs the "
    "network: it runs offline and must stop with output matching REGEX (the point where it "
    "needs the network); the `recover` block (docs/troubleshooting.md) then restores the workspace."
)
RECOVER = "recover"  # docs/troubleshooting.md: the commands that undo a failed experiment


def runs_on_tiny(block: Block) -> bool:
    """A block the docs test runs in the tiny copy: a `command`, or a `params` block of
    commands (not a params.yaml excerpt)."""
    return block.kind == "command" or (block.kind == "params" and block.lang != "yaml")


def named_methods(blocks: Sequence[Block], methods: Sequence[str]) -> list[str]:
    """The methods of `methods` that some block names (as a whole word)."""
    text = "\n".join(b.text for b in blocks)
    return [m for m in methods if re.search(rf"(?<![\w+]){re.escape(m)}(?![\w+])", text)]


def tiny_params(tiny: Mapping[str, Any], default: Mapping[str, Any],
                blocks: Sequence[Block]) -> dict[str, Any]:  # fmt: skip
    """The tiny profile's params as `TINY_PROFILE` maps it for `blocks`."""
    out = {k: dict(v) if isinstance(v, Mapping) else v for k, v in tiny.items()}
    wanted = named_methods(blocks, list(default["methods"]))
    out["methods"] = {m: tiny["methods"].get(m, default["methods"][m]) for m in wanted}
    controls = {c: {**v, "of": [m for m in v.get("of", []) if m in wanted]}
                for c, v in (tiny.get("controls") or {}).items() if c in wanted}  # fmt: skip
    out["controls"] = {c: v for c, v in controls.items() if v["of"]}
    out["post"] = tiny_post(tiny, default, blocks, [*out["methods"], "zero-shot"])
    out["train"] = {**tiny["train"], "seeds": [1]}
    return out


def tiny_post(tiny: Mapping[str, Any], default: Mapping[str, Any], blocks: Sequence[Block],
              bases: Sequence[str]) -> dict[str, Any]:  # fmt: skip
    """The `post:` entries the blocks name (the tiny profile's entry where it has one, else
    the default's) whose base is kept."""
    mine, theirs = tiny.get("post") or {}, default.get("post") or {}
    wanted = named_methods(blocks, list({**theirs, **mine}))
    entries = {e: mine.get(e, theirs.get(e)) for e in wanted}
    return {e: v for e, v in entries.items() if (v or {}).get("base") in bases}
