"""Where every pipeline artifact lives, relative to the repository root: the one place the
library and the stages spell them (``dvc.yaml`` declares the same paths as the stages' deps
and outs; ``tests/unit/test_paths.py`` checks that the two agree)."""

from __future__ import annotations

from pathlib import Path

DATA = Path("data")
PARAMS_OK = DATA / "params.ok"
"""Written by the ``params`` stage once params.yaml is valid; every other stage depends on it."""
CODE = DATA / "code"
"""The code digests the ``params`` stage writes, one per stage module (`pipeline.deps.digest`)."""
CORPUS = DATA / "corpus.parquet"
QUERIES = DATA / "queries.parquet"
QRELS = DATA / "qrels.parquet"
QRELS_TREC = DATA / "qrels.trec"
TRIPLES = DATA / "triples.parquet"
FOLDS = DATA / "folds.parquet"
FIRST_STAGE = DATA / "first_stage.parquet"
ALIGNMENTS = DATA / "alignments.parquet"
DOC_SCORES = DATA / "doc_scores.parquet"
QUERY_COMPLEXITY = DATA / "query_complexity.parquet"
CANDIDATES = DATA / "candidates.parquet"
TRAIN_CANDIDATES = DATA / "train_candidates.parquet"
FEATURES = DATA / "features.safetensors"
TRANSFER = DATA / "transfer"
"""The held-out collection (``transfer_data``, one DVC out): ``transfer_table(name)``."""
EVAL = Path("eval")
METRICS = Path("metrics")
PLOTS = Path("plots")
REPORT_PLOTS = PLOTS / "report"
LIVE = Path("dvclive")
CHECKPOINTS = Path("checkpoints")
CURRICULUM_PLOTS = PLOTS / "curriculum"
PER_QUERY = "per_query.parquet"
"""The per-query metrics of an evaluation folder (``evals(...)``)."""
AUDIT_CSV = METRICS / "audit_edbt2022.csv"
AUDIT_MD = METRICS / "audit_edbt2022.md"


def ordered(method: str) -> Path:
    """The method's triples in training order (``order@<method>``)."""
    return DATA / "order" / f"{method}.parquet"


def order_profile(method: str) -> Path:
    """How Ψ⁺ moves through the method's order (a DVC plot)."""
    return PLOTS / "order" / f"{method}.csv"


def models(method: str, sub: str = "") -> Path:
    """The method's trained models (``sub``: a ``seed-<n>`` folder, or none)."""
    return Path("models", method, sub)


def model(method: str, sub: str, fold: int) -> Path:
    """One fold's trained model."""
    return models(method, sub) / f"fold-{fold}"


def checkpoints(method: str, sub: str, fold: int) -> Path:
    """One fold's resumable training checkpoints: outside the stage's outs, so DVC keeps
    them when a killed stage reruns."""
    return CHECKPOINTS / method / sub / f"fold-{fold}"


def runs(method: str, sub: str = "") -> Path:
    """The folder of the method's run (``run.parquet``, ``run.trec``)."""
    return Path("runs", method, sub)


def run_file(method: str, sub: str = "") -> Path:
    """The method's run (``runs/<method>/[seed-<n>/]run.parquet``)."""
    return runs(method, sub) / "run.parquet"


def evals(method: str, sub: str = "") -> Path:
    """The folder of the method's evaluation (``per_query.parquet``, ``metrics.json``)."""
    return EVAL / method / sub


def metrics(method: str) -> Path:
    """The method's metrics for ``dvc metrics`` (flat keys)."""
    return METRICS / f"{method}.json"


def live(method: str) -> Path:
    """The method's DVCLive training log (``metrics.json``, ``plots/metrics/<run>/*.tsv``)."""
    return LIVE / method


def transfer_table(name: str) -> Path:
    """A table of the held-out collection: ``corpus``, ``queries``, ``qrels``, ``candidates``."""
    return TRANSFER / f"{name}.parquet"


def text_tables(transfer: bool = True) -> list[tuple[Path, Path]]:
    """``(queries, corpus)`` of the collection and (``transfer``) of the held-out one, whose
    ids never collide: the texts a ranker is bound to."""
    tables = [(QUERIES, CORPUS)]
    if transfer:
        tables.append((transfer_table("queries"), transfer_table("corpus")))
    return tables


def transfer_run(method: str, sub: str = "") -> Path:
    """The method's run of the held-out collection (``train@<method>``)."""
    return runs(method, sub) / "transfer.parquet"


def transfer_eval(method: str, sub: str = "") -> Path:
    """The folder of the method's evaluation on the held-out collection."""
    return evals(method, sub) / "transfer"


def weak_run(method: str, sub: str = "") -> Path:
    """EqualizeIR's weak learners' own run of the test queries (``train@<method>``)."""
    return runs(method, sub) / "weak.parquet"
