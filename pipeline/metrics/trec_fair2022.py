"""TREC Fair Ranking 2022 mode (SPEC §4.6): what the track's released evaluation code computes.

Source read: `fair-trec/trec2022-fair-public` @ 6fd105f2 (2022-11-14); every formula below
names the track file and function it follows (see also docs/decisions.md, "TREC Fair 2022
mode"). The code here is our own, over numpy arrays and polars tables.

Alignments. The track's page alignments (`PageAlignments.py`) are one matrix per fairness
dimension, pages × groups, in the order `sub-geo, src-geo, gender, occ, alpha, age, pop,
langs` (`MetricInputs.py`, `dimensions`). `track_alignments` derives them from the project's
tidy table `doc_id, dimension, group, weight` (`pipeline.data.trec_fair`, one row per
ir_datasets field value); dimensions already named as the track names them pass unchanged.
A document is "known" when it has a row in the first dimension present (the track:
`AWRFMetric.known_pages = dimensions[0].page_align_df.index`); a known document without a
row in a later dimension has a zero vector there (the track's `get_dummies` of a missing
category).

Intersectional alignment of a document = outer product of its dimension vectors; a set of
documents aggregates as the weighted sum (or mean) of these outer products
(`wptrec/dimension.py`, `agg_alignments` / `sum_outer` / `mean_outer`).

Task 1 (`wptrec/metrics/awrf.py`, `AWRFMetric`): nDCG with binary relevance over the
discount of a 500-document target length (`qr_ndcg`); AWRF = 1 − JS distance² between the
discount-weighted mean intersectional alignment of the run's known pages and the query
target, natural log (`qr_awrf`, `scipy.spatial.distance.jensenshannon` with its default
base); score = nDCG × AWRF (`__call__`). Target (`Task1Alignment.py`, `query_xalign` and
`avg_with_bg`): the mean intersectional alignment of the relevant pages, whose cells with a
known `sub-geo` / `src-geo` / `gender` are averaged 50/50 with the world-population / gender
background spread over the other dimensions; the all-unknown share is kept.

Task 2 (`wptrec/metrics/eel.py`, `EELMetric`; target `Task2Alignment.py`): system exposure =
Σ over the relevant documents of each ranking of discount × intersectional alignment, / the
number of rankings (`qrs_exposure`); target = the work-needed-weighted mean intersectional
alignment of the relevant pages (`qw_tgt_exposure`: relevant pages ordered Stub → FA, each
work level gets the mean discount of its block), averaged with the backgrounds as in
Task 1, times Σ discount(1..20) (`EELMetric.__call__`); `EE-L = ‖s − t‖²`, `EE-D = s·s`,
`EE-R = s·t`. Under-exposure (`wptrec/metrics/under.py`, `EUEMetric`): page exposures of all
shown pages vs the relevant pages' work-needed target exposures, both normalised to sum 1,
`u = max(t − s, 0)`, group under-exposure `g = Σ_pages u · alignment`, `L2UEXP = g·g`,
`TotUEXP = Σ g`.
"""

from __future__ import annotations

import logging
import math
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import product
from pathlib import Path
from typing import Literal

import numpy as np
import polars as pl

from pipeline.errors import InputError
from pipeline.metrics._fairness import (
    awrf_of_vectors,
    exposure_scores,
    plackett_luce,
    standardise,
)
from pipeline.metrics._fairness import (
    under_exposure as under_vector,
)
from pipeline.metrics.common import Measure
from pipeline.schemas import UNKNOWN_GROUP
from pipeline.ties import fair_discount

log = logging.getLogger(__name__)

PREFIX = "trecfair."
UNKNOWN = "@UNKNOWN"
TASK1_LENGTH = 500
TASK2_RANKINGS = 100
TASK2_LENGTH = 20
# `MetricInputs.py` / `wptrec/metrics/common.py`: work needed, most first.
WORK_ORDER = ("Stub", "Start", "C", "B", "GA", "FA")
# `MetricInputs.py`, `dimensions`: the track's order (averaged dimensions first).
DIMENSIONS = ("sub-geo", "src-geo", "gender", "occ", "alpha", "age", "pop", "langs")
AVERAGED = ("sub-geo", "src-geo", "gender")  # `Task1Alignment.py`, `dim_backgrounds`
# ir_datasets `FairTrec2022Doc` field → track dimension (`PageAlignments.py`, attributes read).
FIELD_TO_DIM = {
    "page_subcont_regions": "sub-geo",
    "source_subcont_regions": "src-geo",
    "gender": "gender",
    "occupations": "occ",
    "first_letter_category": "alpha",
    "creation_date_category": "age",
    "relative_pageviews_category": "pop",
    "num_sitelinks_category": "langs",
}
QUALITY_FIELD = "qual_cat"
CATEGORICAL = ("alpha", "age", "pop", "langs")  # `pd.get_dummies`: no unknown column
OCEANIA = ("Australia and New Zealand", "Melanesia", "Micronesia", "Polynesia")
GENDER_LABELS = (UNKNOWN, "female", "male", "NB")
RESOURCES = Path(__file__).resolve().parent.parent / "resources" / "trec_fair2022"

Backgrounds = Mapping[str, Mapping[str, float]]


# ---------------------------------------------------------------------------------------------
# discount, backgrounds, JS


def discount32(n: int) -> np.ndarray:
    """`1 / log2(max(r, 2))` for ranks 1..n in float32, as the track computes it
    (`wptrec/metrics/common.py`, `discount`)."""
    return fair_discount(np.arange(1, n + 1), np.float32)


def track_discount(n: int) -> np.ndarray:
    """`discount32(n)` as float64 (the track multiplies it into float64 alignments)."""
    return discount32(n).astype(np.float64)


def load_backgrounds(folder: Path = RESOURCES) -> dict[str, dict[str, float]]:
    """The track's background distributions (`MetricInputs.py`): world population over the 20
    UN subregions (`world_pop`: `Population / Σ Population` by `Name`) for `sub-geo` and
    `src-geo`, and `gender_tgt` for `gender`. Shipped in `pipeline/resources/trec_fair2022/`."""
    pop_path, gender_path = folder / "world-pop.csv", folder / "gender-background.csv"
    for path in (pop_path, gender_path):
        if not path.is_file():
            raise FileNotFoundError(
                f"{path}: missing TREC Fair 2022 background; restore "
                "pipeline/resources/trec_fair2022/ from git (see its NOTICE.md)"
            )
    pop = pl.read_csv(pop_path).select("Name", pl.col("Population").cast(pl.Float64))
    total = float(pop["Population"].sum())
    world = {n: p / total for n, p in pop.iter_rows()}
    gender = {
        g: float(w) for g, w in pl.read_csv(gender_path).select("group", "weight").iter_rows()
    }
    return {"sub-geo": world, "src-geo": world, "gender": gender}


def js_divergence(p: np.ndarray, q: np.ndarray) -> float:
    """Squared Jensen-Shannon distance with the natural log, as
    `scipy.spatial.distance.jensenshannon(p, q) ** 2` (used by `awrf.py`, `qr_awrf`): both
    vectors are first normalised to sum 1; `½ KL(p‖m) + ½ KL(q‖m)`, `m = (p + q) / 2`. The
    suite's one implementation (`pipeline.metrics._fairness.awrf_of_vectors`)."""
    return 1.0 - awrf_of_vectors(p, q)


# ---------------------------------------------------------------------------------------------
# alignments


def _renormalise(df: pl.DataFrame) -> pl.DataFrame:
    total = pl.col("weight").sum().over("doc_id", "dimension")
    return (
        df.group_by("doc_id", "dimension", "group", maintain_order=True)
        .agg(pl.col("weight").sum())
        .with_columns(pl.col("weight") / total)
    )


def track_alignments(alignments: pl.DataFrame) -> pl.DataFrame:
    """The track's page alignments (`PageAlignments.py`) from the project's tidy alignments.

    Per ir_datasets field (renamed to the track's dimension):
    - `page_subcont_regions` → `sub-geo`, `source_subcont_regions` → `src-geo`: the four
      Oceania subregions are summed into `Oceania`, `UNK` and the project's `Unknown` become
      `@UNKNOWN`, each document renormalised to sum 1 (`norm_align_matrix`);
    - `gender` → `gender`: `cisgender/transgender (fe)male` → `(fe)male`, any other label but
      `female`/`male` → `NB`, each distinct label weight 1 (a multi-hot row, not normalised,
      as the track's pivot); no label → `@UNKNOWN`;
    - `occupations` → `occ`: `Unknown` → `@UNKNOWN`, renormalised;
    - the four `*_category` fields → `alpha`, `age`, `pop`, `langs`: one-hot; a missing
      category (`Unknown`) is a zero row, as `pd.get_dummies`.
    Other dimensions are dropped (logged); dimensions already named as the track's pass as they
    are (`gender`, the same name in both, is converted; the conversion leaves a track-form
    gender table unchanged). Rows are sorted by `doc_id, dimension, group`.
    """
    present = alignments["dimension"].unique().to_list()
    ignored = sorted(d for d in present if d not in FIELD_TO_DIM and d not in DIMENSIONS)
    if ignored:
        log.info("trecfair: dimensions %s are not the track's; ignored", ignored)
    parts: list[pl.DataFrame] = []
    for field, dim in FIELD_TO_DIM.items():
        if dim in present and dim != field:
            parts.append(alignments.filter(pl.col("dimension") == dim))
            continue
        if field not in present:
            continue
        part = alignments.filter(pl.col("dimension") == field).with_columns(dimension=pl.lit(dim))
        group = pl.col("group")
        if dim in ("sub-geo", "src-geo"):
            part = part.with_columns(
                pl.when(group.is_in(OCEANIA))
                .then(pl.lit("Oceania"))
                .when(group.is_in(["UNK", UNKNOWN_GROUP]))
                .then(pl.lit(UNKNOWN))
                .otherwise(group)
                .alias("group")
            )
            part = _renormalise(part)
        elif dim == "gender":
            collapsed = group.str.replace_all(r"(?:tran|ci)sgender\s+((?:fe)?male)", "$1")
            part = part.with_columns(
                pl.when(group.is_in([UNKNOWN_GROUP, UNKNOWN]))
                .then(pl.lit(UNKNOWN))
                .when(collapsed.is_in(["female", "male"]))
                .then(collapsed)
                .otherwise(pl.lit("NB"))
                .alias("group"),
                weight=pl.lit(1.0),
            ).unique(["doc_id", "dimension", "group"], maintain_order=True)
        elif dim == "occ":
            part = _renormalise(
                part.with_columns(
                    pl.when(group == UNKNOWN_GROUP)
                    .then(pl.lit(UNKNOWN))
                    .otherwise(group)
                    .alias("group")
                )
            )
        else:  # categorical: one-hot, a missing category is a zero row
            part = part.filter(group != UNKNOWN_GROUP).with_columns(weight=pl.lit(1.0))
        parts.append(part.select("doc_id", "dimension", "group", "weight"))
    if not parts:
        return alignments.head(0)
    return pl.concat(parts).sort("doc_id", "dimension", "group")


def quality_table(alignments: pl.DataFrame) -> pl.DataFrame:
    """`doc_id, quality`: the discretised quality (`qual_cat`, `WORK_ORDER`) of each document,
    read from the alignments' `qual_cat` dimension (add `qual_cat` to
    `dataset.trec_fair_2022.dimensions`); empty when absent."""
    part = alignments.filter(
        (pl.col("dimension") == QUALITY_FIELD) & pl.col("group").is_in(WORK_ORDER)
    )
    return part.select("doc_id", pl.col("group").alias("quality")).unique("doc_id", keep="first")


@dataclass(frozen=True)
class TrackDims:
    """Dense per-dimension alignment matrices of the known documents.

    `groups[d]` starts with `@UNKNOWN` for the averaged dimensions (the track's column order,
    `case_selector` of `Task1Alignment.py` takes column 0 as unknown); `matrices[d]` is
    documents × groups; `backgrounds[d]` is over `groups[d]` (0 at `@UNKNOWN`) for the first
    `n_avg` dimensions."""

    names: tuple[str, ...]
    groups: tuple[tuple[str, ...], ...]
    doc_index: Mapping[str, int]
    matrices: tuple[np.ndarray, ...]
    backgrounds: tuple[np.ndarray, ...]

    @property
    def n_avg(self) -> int:
        return len(self.backgrounds)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(g) for g in self.groups)

    def rows(self, doc_ids: Sequence[str]) -> list[np.ndarray]:
        """Per-dimension alignment rows of known `doc_ids` (unknown ids must be filtered)."""
        idx = np.array([self.doc_index[d] for d in doc_ids], dtype=np.int64)
        return [m[idx] for m in self.matrices]

    def known(self, doc_ids: Iterable[str]) -> np.ndarray:
        return np.array([d in self.doc_index for d in doc_ids], dtype=bool)


def build_dims(track: pl.DataFrame, backgrounds: Backgrounds | None = None) -> TrackDims:
    """`TrackDims` from a track-form table (`track_alignments`), dimensions in the track's order.

    Averaged dimensions (`sub-geo`, `src-geo`, `gender`) get the groups `@UNKNOWN` + the sorted
    union of the data's and the background's known groups, so no background mass is lost when
    the sampled corpus lacks a group (the track's tables span the whole corpus); a data group
    missing from the background gets background 0."""
    bgs = load_backgrounds() if backgrounds is None else backgrounds
    names = tuple(d for d in DIMENSIONS if d in set(track["dimension"].unique().to_list()))
    if not names:
        raise InputError(
            f"trecfair: no track dimension in the alignments (need some of {DIMENSIONS} or the "
            f"ir_datasets fields {list(FIELD_TO_DIM)}); add them to "
            "dataset.trec_fair_2022.dimensions"
        )
    first = track.filter(pl.col("dimension") == names[0])
    doc_ids = sorted(first["doc_id"].unique().to_list())
    doc_index = {d: i for i, d in enumerate(doc_ids)}
    groups: list[tuple[str, ...]] = []
    matrices: list[np.ndarray] = []
    backs: list[np.ndarray] = []
    for name in names:
        part = track.filter((pl.col("dimension") == name) & pl.col("doc_id").is_in(doc_ids))
        seen = set(part["group"].unique().to_list())
        if name in AVERAGED:
            bg = bgs[name]
            known = sorted((seen | set(bg)) - {UNKNOWN})
            grp = (UNKNOWN, *known)
            backs.append(np.array([0.0, *(float(bg.get(g, 0.0)) for g in known)]))
        else:
            grp = tuple(sorted(seen))
        col = {g: j for j, g in enumerate(grp)}
        mat = np.zeros((len(doc_ids), len(grp)))
        rows = np.array([doc_index[d] for d in part["doc_id"].to_list()], dtype=np.int64)
        cols = np.array([col[g] for g in part["group"].to_list()], dtype=np.int64)
        np.add.at(mat, (rows, cols), part["weight"].to_numpy())
        missing = int((mat.sum(axis=1) == 0).sum())
        if missing:
            log.info("trecfair: %d known documents have a zero %s vector", missing, name)
        groups.append(grp)
        matrices.append(mat)
    n_avg = sum(1 for n in names if n in AVERAGED)
    if names[:n_avg] != tuple(n for n in names if n in AVERAGED):
        raise AssertionError("averaged dimensions must come first")  # DIMENSIONS guarantees it
    return TrackDims(names, tuple(groups), doc_index, tuple(matrices), tuple(backs))


def weighted_outer_sum(rows: Sequence[np.ndarray], weights: np.ndarray) -> np.ndarray:
    """`Σ_i w_i · (a_i¹ ⊗ a_i² ⊗ …)`, shape = the groups of each dimension
    (`wptrec/dimension.py`, `agg_alignments(arrays, 'sum', weights)`; computed as the track
    does, as a product of two half-outer-product matrices, to bound memory)."""
    n = weights.shape[0]
    shape = tuple(r.shape[1] for r in rows)
    if n == 0:
        return np.zeros(shape)

    def row_outer(parts: Sequence[np.ndarray]) -> np.ndarray:
        out = np.ones((n, 1))
        for part in parts:
            out = (out[:, :, None] * part[:, None, :]).reshape(n, -1)
        return out

    log_sizes = np.cumsum(np.log(np.maximum(shape, 1)))
    split = max(1, int(np.sum(log_sizes / log_sizes[-1] < 0.5))) if log_sizes[-1] > 0 else 1
    left = row_outer(rows[:split]) * weights[:, None]
    right = row_outer(rows[split:])
    return (left.T @ right).reshape(shape)


def average_with_background(tm: np.ndarray, backgrounds: Sequence[np.ndarray]) -> np.ndarray:
    """Average the known part of the target with the background (`Task1Alignment.py` and
    `Task2Alignment.py`, `avg_with_bg`).

    `tm` has the averaged dimensions first (unknown at index 0 of each). For every known /
    unknown status of the averaged dimensions except all-unknown: the cells `sel` with that
    status (known: groups 1.., unknown: group 0) become `½ tm[sel] + ½ bg ⊗ tail · c`, with
    `bg` the outer product of the known dimensions' backgrounds, `c = Σ tm[sel]` and `tail`
    the distribution over the remaining (not averaged) dimensions given the averaged cell
    (the marginal over all averaged cells where a cell has no mass). The all-unknown cells
    keep their mass."""
    n_avg = len(backgrounds)
    tail_axes = tuple(range(n_avg, tm.ndim))
    tail_mass = tm.sum(axis=tail_axes, keepdims=True)
    tail_marg = tm.sum(axis=tuple(range(n_avg)), keepdims=True)
    imputed = np.where(tail_mass > 0, tm, tail_marg)
    with np.errstate(invalid="ignore", divide="ignore"):
        tail_scale = imputed / imputed.sum(axis=tail_axes, keepdims=True)
    out = tm.copy()
    cases = list(product([True, False], repeat=n_avg))[:-1]  # drop all-unknown
    for case in cases:
        sel = tuple(slice(1, None) if known else 0 for known in case)
        bg = np.ones(())
        for back, known in zip(backgrounds, case, strict=True):
            if known:
                bg = np.multiply.outer(bg, back[1:])
        bg = bg.reshape(bg.shape + (1,) * len(tail_axes))
        c_sum = tm[sel].sum()
        out[sel] = 0.5 * tm[sel] + 0.5 * bg * tail_scale[sel] * c_sum
    return out


# ---------------------------------------------------------------------------------------------
# Task 1


def task1_target(dims: TrackDims, relevant: Sequence[str]) -> np.ndarray:
    """Query target (`Task1Alignment.py`, `query_xalign`): mean intersectional alignment of the
    known relevant pages, averaged with the backgrounds (`average_with_background`)."""
    rel = [d for d in relevant if d in dims.doc_index]
    if not rel:
        return np.full(dims.shape, np.nan)
    tm = weighted_outer_sum(dims.rows(rel), np.ones(len(rel))) / len(rel)
    return average_with_background(tm, dims.backgrounds)


def task1_ndcg(ranking: Sequence[str], relevant: set[str], target_len: int = TASK1_LENGTH) -> float:
    """`awrf.py`, `AWRFMetric.qr_ndcg`: binary gains, discount over `target_len` positions, ideal
    = the first `min(target_len, |relevant|)` discounts. A run longer than `target_len` is an
    error, as in the track."""
    if len(ranking) > target_len:
        raise InputError(f"trecfair Task 1: {len(ranking)} documents > {target_len} in a ranking")
    if not relevant:
        return math.nan
    disc = discount32(target_len)  # the track sums in float32
    gains = np.array([d in relevant for d in ranking], dtype=np.float32)
    ideal = disc[: min(target_len, len(relevant))].sum()
    return float(np.sum(gains * disc[: len(ranking)]) / ideal)


def task1_awrf(ranking: Sequence[str], dims: TrackDims, target: np.ndarray) -> float:
    """`awrf.py`, `AWRFMetric.qr_awrf`: discount of each run position (over the run's length),
    unknown pages dropped (their ranks kept), discount-weighted mean intersectional alignment,
    `1 − JS distance²` to the target (natural log). NaN without a known page or target."""
    known = dims.known(ranking)
    if not known.any() or not np.isfinite(target).all():
        return math.nan
    disc = track_discount(len(ranking))[known]
    docs = [d for d, k in zip(ranking, known, strict=True) if k]
    run_dist = weighted_outer_sum(dims.rows(docs), disc) / disc.sum()
    if run_dist.sum() <= 0 or target.sum() <= 0:
        return math.nan
    return awrf_of_vectors(run_dist, target)


def task1_scores(
    run: pl.DataFrame, qrels: pl.DataFrame, dims: TrackDims, target_len: int = TASK1_LENGTH
) -> pl.DataFrame:
    """Per query `nDCG, AWRF, Score` (`awrf.py`, `AWRFMetric.__call__`) of the run's top
    `target_len` (what the Task 1 submission file holds), prefixed `trecfair.`."""
    rel = relevant_docs(qrels)
    rows = []
    for (qid,), part in run.sort("query_id", "rank").group_by("query_id", maintain_order=True):
        ranking = part["doc_id"].head(target_len).to_list()
        relevant = rel.get(str(qid), [])
        ndcg = task1_ndcg(ranking, set(relevant), target_len)
        awrf = task1_awrf(ranking, dims, task1_target(dims, relevant))
        rows.append({"query_id": qid, "nDCG": ndcg, "AWRF": awrf, "Score": ndcg * awrf})
    return _prefixed(rows, ["nDCG", "AWRF", "Score"])


# ---------------------------------------------------------------------------------------------
# Task 2


def work_target_exposure(levels: Sequence[str]) -> np.ndarray:
    """Per relevant page, the target exposure of its work level (`Task2Alignment.py`,
    `qw_tgt_exposure`): the pages ordered by `WORK_ORDER` (most work needed first) over
    positions 1..n, each level gets the mean discount of its block of positions."""
    bad = sorted({lv for lv in levels if lv not in WORK_ORDER})
    if bad:
        raise InputError(f"trecfair: work levels {bad} are not in {WORK_ORDER}")
    disc = discount32(len(levels))  # means in float32, as the track
    counts = [sum(1 for lv in levels if lv == w) for w in WORK_ORDER]
    ends = np.cumsum(counts)
    level_exp = {
        w: float(disc[e - c : e].mean())
        for w, c, e in zip(WORK_ORDER, counts, ends, strict=True)
        if c
    }
    return np.array([level_exp[lv] for lv in levels])


def task2_target(
    dims: TrackDims, relevant: Sequence[str], quality: Mapping[str, str]
) -> np.ndarray:
    """Target distribution (`Task2Alignment.py`, `query_xalign`): the intersectional alignments
    of the known relevant pages with a work level, weighted by their target exposure
    (`work_target_exposure`), summed and divided by the weights' sum, then averaged with the
    backgrounds (`average_with_background`). NaN when no such page."""
    rel = [d for d in relevant if d in dims.doc_index and d in quality]
    if not rel:
        return np.full(dims.shape, np.nan)
    weights = work_target_exposure([quality[d] for d in rel])
    tm = weighted_outer_sum(dims.rows(rel), weights) / weights.sum()
    return average_with_background(tm, dims.backgrounds)


def group_exposure(
    rankings: Sequence[Sequence[str]], relevant: set[str], dims: TrackDims
) -> np.ndarray:
    """System group exposure (`eel.py`, `EELMetric.qrs_exposure`, `only_rel=True`): in each
    ranking the discount of each position (over that ranking's length); only relevant pages
    count; Σ discount × intersectional alignment within rankings, / the number of rankings."""
    docs: list[str] = []
    weights: list[float] = []
    for ranking in rankings:
        disc = track_discount(len(ranking))
        for doc, w in zip(ranking, disc, strict=True):
            if doc in relevant and doc in dims.doc_index:
                docs.append(doc)
                weights.append(float(w))
    if not docs:
        return np.zeros(dims.shape)
    return weighted_outer_sum(dims.rows(docs), np.array(weights)) / len(rankings)


def ee_scores(
    s: np.ndarray, target: np.ndarray, target_len: int = TASK2_LENGTH
) -> dict[str, float]:
    """`eel.py`, `EELMetric.__call__` (normalize=False): the target distribution scaled by the
    exposure of a full ranking `Σ discount(1..target_len)`; `EE-L = ‖s − t‖²`, `EE-D = s·s`,
    `EE-R = s·t` over the flattened group vectors."""
    t = np.ravel(target) * float(discount32(target_len).sum())  # float32 sum, as the track
    return exposure_scores(np.ravel(s), t, None)


def page_exposure(rankings: Sequence[Sequence[str]]) -> dict[str, float]:
    """Mean over rankings of each shown page's discount, 0 when not shown (`under.py`,
    `qrs_page_exposure`); all pages count, relevant or not."""
    out: dict[str, float] = {}
    for ranking in rankings:
        for doc, w in zip(ranking, track_discount(len(ranking)), strict=True):
            out[doc] = out.get(doc, 0.0) + float(w)
    return {d: v / len(rankings) for d, v in out.items()}


def under_exposure(
    rankings: Sequence[Sequence[str]], page_targets: Mapping[str, float], dims: TrackDims
) -> dict[str, float]:
    """`under.py`, `EUEMetric.__call__`: page target and system exposures each normalised to
    sum 1, `u = max(t − s, 0)` over their union, `g = Σ_pages u · alignment` over the known
    pages (intersectional alignment, see docs/decisions.md), `L2UEXP = g·g`, `TotUEXP = Σ g`."""
    s = page_exposure(rankings)
    pages = sorted(set(page_targets) | set(s))
    u = under_vector(np.array([s.get(p, 0.0) for p in pages]),
                     np.array([page_targets.get(p, 0.0) for p in pages]))  # fmt: skip
    under = dict(zip(pages, u.tolist(), strict=True))
    known = [p for p in pages if p in dims.doc_index and under[p] > 0]
    g = weighted_outer_sum(dims.rows(known), np.array([under[p] for p in known])).ravel()
    return {"L2UEXP": float(g @ g), "TotUEXP": float(g.sum())}


def task2_scores(
    rankings: pl.DataFrame,
    qrels: pl.DataFrame,
    quality: pl.DataFrame,
    dims: TrackDims,
    target_len: int = TASK2_LENGTH,
) -> pl.DataFrame:
    """Per query `EE-L, EE-D, EE-R, L2UEXP, TotUEXP`, prefixed `trecfair.`, from
    `query_id, rep_number, rank, doc_id` rankings (`sample_rankings` or a read submission)."""
    rel = relevant_docs(qrels)
    qual = dict(quality.select("doc_id", "quality").iter_rows())
    rows = []
    ordered = rankings.sort("query_id", "rep_number", "rank")
    for (qid,), part in ordered.group_by("query_id", maintain_order=True):
        reps = [g["doc_id"].to_list() for _, g in part.group_by("rep_number", maintain_order=True)]
        relevant = rel.get(str(qid), [])
        target = task2_target(dims, relevant, qual)
        if not np.isfinite(target).all():
            rows.append({"query_id": qid})
            continue
        s = group_exposure(reps, set(relevant), dims)
        graded = [d for d in relevant if d in qual]
        page_targets = dict(
            zip(graded, work_target_exposure([qual[d] for d in graded]), strict=True)
        )
        rows.append(
            {
                "query_id": qid,
                **ee_scores(s, target, target_len),
                **under_exposure(reps, page_targets, dims),
            }
        )
    return _prefixed(rows, ["EE-L", "EE-D", "EE-R", "L2UEXP", "TotUEXP"])


def sample_rankings(
    run: pl.DataFrame,
    n_rankings: int = TASK2_RANKINGS,
    length: int = TASK2_LENGTH,
    temperature: float = 1.0,
    seed: int = 0,
) -> pl.DataFrame:
    """`query_id, rep_number (1..n), rank (1..length), doc_id`: Plackett-Luce rankings over the
    per-query standardised run scores, seeded per query as `pipeline.metrics.exposure`
    (`expected_exposure`: documents in `doc_id` order, rng `[seed, crc32(query_id)]`)."""
    parts = []
    for (qid,), part in run.sort("query_id", "doc_id").group_by("query_id", maintain_order=True):
        rng = np.random.default_rng([seed, zlib.crc32(str(qid).encode())])
        z = standardise(part["score"].to_numpy())
        idx = plackett_luce(z, n_rankings, length, temperature, rng)
        docs = np.asarray(part["doc_id"].to_list(), dtype=object)[idx]
        reps, ranks = np.indices(idx.shape)
        parts.append(
            pl.DataFrame(
                {
                    "query_id": [qid] * idx.size,
                    "rep_number": (reps + 1).ravel().astype(np.int64),
                    "rank": (ranks + 1).ravel().astype(np.int64),
                    "doc_id": docs.ravel().tolist(),
                },
                schema={
                    "query_id": pl.Utf8, "rep_number": pl.Int64, "rank": pl.Int64,
                    "doc_id": pl.Utf8,
                },
            )
        )  # fmt: skip
    if not parts:
        raise InputError("trecfair: empty run, no rankings to sample")
    return pl.concat(parts)


# ---------------------------------------------------------------------------------------------
# entry point


Mode = Literal["auto", "on", "off"]
"""Whether a family also computes the track's variant: ``auto`` where the alignments carry
the track's dimensions (``has_track_dimensions``)."""
SETTING = "trec_fair_2022"
"""The setting of the ``awrf`` and ``exposure`` records that adds the track's variant."""
TASK1_MEASURES = (
    Measure(f"{PREFIX}nDCG", "↑", "TREC Fair 2022 Task 1 nDCG (binary, 500-rank discount)",
            lo=0.0, hi=1.0, fairness=False, setting=SETTING),
    Measure(f"{PREFIX}AWRF", "↑", "TREC Fair 2022 Task 1 AWRF (the track's targets, float32)",
            lo=1 - math.log(2), hi=1.0, setting=SETTING),
    Measure(f"{PREFIX}Score", "↑", "TREC Fair 2022 Task 1 score: nDCG × AWRF", lo=0.0, hi=1.0,
            setting=SETTING),
)  # fmt: skip
"""The Task 1 values of the ``awrf`` record's track variant."""
TASK2_MEASURES = (
    Measure(f"{PREFIX}EE-L", "↓", "TREC Fair 2022 Task 2 expected exposure loss", lo=0.0,
            setting=SETTING),
    Measure(f"{PREFIX}EE-D", "↓", "TREC Fair 2022 Task 2 expected exposure disparity", lo=0.0,
            setting=SETTING),
    Measure(f"{PREFIX}EE-R", "↑", "TREC Fair 2022 Task 2 expected exposure relevance", lo=0.0,
            fairness=False, setting=SETTING),
    Measure(f"{PREFIX}L2UEXP", "↓", "TREC Fair 2022 Task 2 group under-exposure ‖g‖²", lo=0.0,
            setting=SETTING),
    Measure(f"{PREFIX}TotUEXP", "↓", "TREC Fair 2022 Task 2 total group under-exposure Σg",
            lo=0.0, setting=SETTING),
)  # fmt: skip
"""The Task 2 values of the ``exposure`` record's track variant."""


def has_track_dimensions(alignments: pl.DataFrame | None) -> bool:
    """Whether per-dimension alignments hold a fairness dimension of the track (its name, or
    the ir_datasets field it is read from)."""
    if alignments is None or alignments.height == 0:
        return False
    present = set(alignments["dimension"].unique().to_list())
    return bool(present & (set(FIELD_TO_DIM) | set(DIMENSIONS)))


def applies(mode: Mode, alignments: pl.DataFrame | None) -> bool:
    """Whether a family computes the track's variant under ``mode`` for these alignments."""
    return mode == "on" or (mode == "auto" and has_track_dimensions(alignments))


def dims_of(alignments: pl.DataFrame | None, backgrounds: Backgrounds | None) -> TrackDims:
    """The track's dimensions built from the documents' ``alignments`` (an `InputError` with
    the fix where there are none; a missing dimension is logged)."""
    if alignments is None:
        raise InputError(
            "trecfair: the TREC Fair 2022 variant needs the documents' alignments per "
            "dimension (data/alignments.parquet); set evaluate.awrf/exposure.trec_fair_2022 "
            "to auto or off for a collection without them"
        )
    dims = build_dims(track_alignments(alignments), backgrounds)
    missing = [d for d in DIMENSIONS if d not in dims.names]
    if missing:
        log.warning(
            "trecfair: dimensions %s absent (the track uses all of %s); computed over %s. Add "
            "their ir_datasets fields to dataset.trec_fair_2022.dimensions for the track's full "
            "metric",
            missing, list(DIMENSIONS), list(dims.names),
        )  # fmt: skip
    return dims


def task1_metrics(
    run: pl.DataFrame,
    qrels: pl.DataFrame,
    alignments: pl.DataFrame | None,
    backgrounds: Backgrounds | None = None,
) -> pl.DataFrame:
    """Per-query `trecfair.nDCG, trecfair.AWRF, trecfair.Score` (Task 1 on the run's top
    500). `alignments`: per dimension (`data/alignments.parquet`, ir_datasets field names,
    see `track_alignments`); `qrels`: `query_id, doc_id, relevance` (relevant: > 0)."""
    return task1_scores(run, qrels, dims_of(alignments, backgrounds))


def task2_metrics(
    run: pl.DataFrame,
    qrels: pl.DataFrame,
    alignments: pl.DataFrame | None,
    *,
    temperature: float = 1.0,
    seed: int = 0,
    backgrounds: Backgrounds | None = None,
) -> pl.DataFrame:
    """Per-query `trecfair.EE-L, -D, -R, trecfair.L2UEXP, trecfair.TotUEXP` (Task 2 on
    `sample_rankings(run, 100, 20, temperature, seed)`), only when the alignments carry
    `qual_cat`, the work-needed levels (else `query_id` alone, with a warning)."""
    quality = quality_table(alignments) if alignments is not None else pl.DataFrame()
    if quality.height == 0:
        log.warning(
            "trecfair: no `%s` dimension in the alignments, so no Task 2 work-needed target; "
            "add `%s` to dataset.trec_fair_2022.dimensions to compute EE-L/D/R and under-exposure",
            QUALITY_FIELD, QUALITY_FIELD,
        )  # fmt: skip
        return run.select(pl.col("query_id").cast(pl.Utf8)).unique(maintain_order=True)
    dims = dims_of(alignments, backgrounds)
    rankings = sample_rankings(run, temperature=temperature, seed=seed)
    return task2_scores(rankings, qrels, quality, dims)


def trec_fair_metrics(
    run: pl.DataFrame,
    qrels: pl.DataFrame,
    alignments: pl.DataFrame,
    *,
    temperature: float = 1.0,
    seed: int = 0,
    backgrounds: Backgrounds | None = None,
) -> pl.DataFrame:
    """Every TREC Fair 2022 value of a run: `task1_metrics` joined with `task2_metrics` (what
    the `awrf` and `exposure` records add with their track variant)."""
    out = task1_metrics(run, qrels, alignments, backgrounds)
    task2 = task2_metrics(run, qrels, alignments, temperature=temperature, seed=seed,
                          backgrounds=backgrounds)  # fmt: skip
    return out.join(task2, on="query_id", how="left")


def relevant_docs(qrels: pl.DataFrame) -> dict[str, list[str]]:
    """``{query: its relevant documents, sorted}`` of ``qrels`` (relevance > 0)."""
    rel = qrels.filter(pl.col("relevance") > 0).sort("query_id", "doc_id")
    return {
        str(q): docs
        for q, docs in rel.group_by("query_id", maintain_order=True)
        .agg(pl.col("doc_id"))
        .iter_rows()
    }


def _prefixed(rows: list[dict[str, object]], names: list[str]) -> pl.DataFrame:
    """Rows → `query_id` + Float64 `trecfair.<name>` columns (NaN → null)."""
    schema: dict[str, pl.DataType] = {"query_id": pl.Utf8()}
    schema |= {f"{PREFIX}{n}": pl.Float64() for n in names}
    data = [
        {"query_id": str(r["query_id"])}
        | {
            f"{PREFIX}{n}": (None if v is None or (isinstance(v, float) and math.isnan(v)) else v)
            for n in names
            for v in [r.get(n)]
        }
        for r in rows
    ]
    return pl.DataFrame(data, schema=schema)
