"""Model cards (Hugging Face ``README.md`` with YAML front matter) for saved rankers.

``Ranker.save`` writes a card from the model's config; ``python -m pipeline.models.card
METHOD --fold K --out DIR`` exports a trained fold model with a card that also reports the
method's measured metrics (``metrics/<method>.json``) and a "Bias, risks and limitations"
section written from them, next to the ``bm25`` and ``zero-shot`` rows.
"""

from __future__ import annotations

import argparse
import json
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from pipeline import paths

if TYPE_CHECKING:
    from pipeline.models.base import Family

HEADLINE = ("MRR@10", "nDCG@10", "ARaB-tf-abs@10", "NFaiRR@10", "LIWC@10", "gap-mean", "gap-abs")
BASE_MODELS = {"all-MiniLM-L6-v2": "sentence-transformers/all-MiniLM-L6-v2"}


def _family(arch: str) -> Family:
    """The family record of ``arch`` (its card facts: library, task tag, how to load it)."""
    from pipeline.models.registry import get_family  # the registry imports this module

    return get_family(arch)


def front_matter(arch: str, base: str, method: str | None) -> dict[str, Any]:
    family = _family(arch)
    return {
        "base_model": BASE_MODELS.get(base, base),
        "library_name": family.library,
        "pipeline_tag": family.pipeline_tag,
        "license": "apache-2.0",
        "datasets": ["Grep-BiasIR"],
        "language": ["en"],
        "tags": ["fairness", "gender-bias", "information-retrieval", "reranking", arch]
        + ([f"method:{method}"] if method else []),
    }


def _fmt(x: object) -> str:
    return f"{x:.4f}" if isinstance(x, float) else str(x)


def card(
    meta: Mapping[str, Any],
    method: str | None = None,
    metrics: Mapping[str, Mapping[str, Any]] | None = None,
) -> str:
    """The card's text. ``metrics``: row name (``method``, ``bm25``, ``zero-shot``) → metrics."""
    cfg = meta["config"]
    arch, base = str(meta["arch"]), str(meta.get("base", cfg["name"]))
    head = yaml.safe_dump(front_matter(arch, base, method), sort_keys=False)
    lines = [f"---\n{head}---", f"# {method or 'ranker'} ({arch})", ""]
    lines += [
        f"A `{arch}` ranker fine-tuned from `{base}` by the fair-ranking pipeline"
        + (f" with the bias-mitigation method `{method}`." if method else "."),
        "Load it with " + _family(arch).usage, "", "## Configuration", "", "```json",
        json.dumps(cfg, indent=2), "```", "",
    ]  # fmt: skip
    if metrics and method is not None and method in metrics:
        rows = [r for r in (method, "bm25", "zero-shot") if r in metrics]
        keys = [k for k in HEADLINE if k in metrics[method]]
        lines += ["## Measured on the default data", "",
                  "| row | " + " | ".join(keys) + " |", "|---" * (len(keys) + 1) + "|"]  # fmt: skip
        lines += [f"| {r} | " + " | ".join(_fmt(metrics[r].get(k, "")) for k in keys) + " |"
                  for r in rows]  # fmt: skip
        n = metrics[method].get("n_queries")
        lines += ["", f"Grep-BiasIR, {n} queries (k-fold cross-validation over queries).", ""]
        lines += ["## Bias, risks and limitations", "", *_risks(metrics[method]), ""]
    else:
        lines += ["## Bias, risks and limitations", "",
                  "Not yet measured: export with `python -m pipeline.models.card` after "
                  "`dvc repro` to add the measured numbers.", ""]  # fmt: skip
    return "\n".join(lines)


def _risks(m: Mapping[str, Any]) -> list[str]:
    out = []
    arab = m.get("ARaB-tf@10")
    if isinstance(arab, float):
        side = "male" if arab > 0 else "female"
        out.append(f"- Signed ARaB-tf@10 is {arab:+.4f}: its top 10 lean {side} on average.")
    gap, wins = m.get("gap-mean"), m.get("gap-male-wins")
    if isinstance(gap, float) and isinstance(wins, float):
        out.append(
            f"- Counterfactual gap: the male version of a relevant document ranks {gap:+.2f} "
            f"places above the female version on average; the male version wins on "
            f"{100 * wins:.0f}% of the queries."
        )
    out.append("- Grep-BiasIR has 117 queries and binary gender labels: these numbers show the "
               "method's direction on real text, not its effect at MS MARCO scale, and say "
               "nothing about non-binary gender.")  # fmt: skip
    return out


def export(method: str, fold: int, out: Path, root: Path = Path(".")) -> Path:
    """Copy ``models/<method>/fold-<fold>`` to ``out`` with a card that has the metrics."""
    src = root / paths.model(method, "", fold)
    if not src.is_dir():
        raise FileNotFoundError(f"{src}: no trained model; run `dvc repro train@{method}`")
    shutil.copytree(src, out, dirs_exist_ok=True)
    meta = json.loads((src / "ranker.json").read_text())
    files = {r: root / paths.metrics(r) for r in (method, "bm25", "zero-shot")}
    metrics = {r: json.loads(f.read_text()) for r, f in files.items() if f.is_file()}
    (out / "README.md").write_text(card(meta, method, metrics))
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("method")
    parser.add_argument("--fold", type=int, default=0)
    parser.add_argument("--out", required=True, type=Path)
    ns = parser.parse_args(argv)
    print(export(ns.method, ns.fold, ns.out))


if __name__ == "__main__":
    main()
