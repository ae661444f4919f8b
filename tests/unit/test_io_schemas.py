"""Atomic writes and schema validation of artifacts."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from pipeline import io, schemas


def _run() -> pl.DataFrame:
    return pl.DataFrame(
        {"query_id": ["1", "1"], "doc_id": ["a", "b"], "score": [2.0, 1.0], "rank": [1, 2]}
    )


def test_round_trip(tmp_path: Path) -> None:
    p = tmp_path / "run.parquet"
    io.write_table(_run(), p, schemas.RUN)
    assert io.read_table(p, schemas.RUN).equals(_run())
    assert [x.name for x in tmp_path.iterdir()] == ["run.parquet"]


def test_missing_and_extra_columns_named(tmp_path: Path) -> None:
    bad = _run().drop("rank").with_columns(pl.lit(1).alias("foo"))
    with pytest.raises(
        schemas.SchemaError, match=r"missing columns \['rank'\].*unexpected columns \['foo'\]"
    ):
        io.write_table(bad, tmp_path / "x.parquet", schemas.RUN)
    assert not list(tmp_path.iterdir())


def test_wrong_type_named(tmp_path: Path) -> None:
    bad = _run().with_columns(pl.col("rank").cast(pl.Utf8))
    with pytest.raises(schemas.SchemaError, match=r"rank: expected int64, got string"):
        io.write_table(bad, tmp_path / "x.parquet", schemas.RUN)


def test_duplicate_ids_named(tmp_path: Path) -> None:
    bad = pl.concat([_run(), _run().head(1)])
    with pytest.raises(schemas.SchemaError, match=r"duplicate \('query_id', 'doc_id'\).*'a'"):
        io.write_table(bad, tmp_path / "x.parquet", schemas.RUN)


def test_truncated_parquet(tmp_path: Path) -> None:
    p = tmp_path / "run.parquet"
    io.write_table(_run(), p, schemas.RUN)
    p.write_bytes(p.read_bytes()[:40])
    with pytest.raises(io.ArtifactError, match=r"run\.parquet: not a readable Parquet file"):
        io.read_table(p, schemas.RUN)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(io.ArtifactError, match=r"nope\.parquet: file not found"):
        io.read_table(tmp_path / "nope.parquet", schemas.RUN)


def test_failed_write_keeps_old_artifact(tmp_path: Path) -> None:
    p = tmp_path / "m.json"
    io.write_json({"a": 1.0}, p)
    with pytest.raises(ValueError, match="non-finite"):
        io.write_json({"a": float("nan")}, p)
    assert io.read_json(p) == {"a": 1.0}
    assert [x.name for x in tmp_path.iterdir()] == ["m.json"]


def test_trec_round_trip_and_ties(tmp_path: Path) -> None:
    p = tmp_path / "r.trec"
    p.write_text("q1 Q0 b 1 1.0 t\nq1 Q0 a 2 1.0 t\nq1 Q0 c 3 3.0 t\n")
    run = io.read_trec_run(p)
    # sorted by score; the tie keeps file order
    assert run["doc_id"].to_list() == ["c", "b", "a"]
    assert run["rank"].to_list() == [1, 2, 3]
    io.write_trec_run(run, tmp_path / "w.trec", "x")
    assert io.read_trec_run(tmp_path / "w.trec")["doc_id"].to_list() == ["c", "b", "a"]


def test_trec_nan_score(tmp_path: Path) -> None:
    p = tmp_path / "r.trec"
    p.write_text("q1 Q0 a 1 nan t\n")
    with pytest.raises(io.ArtifactError, match=r"r\.trec: 1 non-finite scores, first query q1"):
        io.read_trec_run(p)


def test_trec_malformed(tmp_path: Path) -> None:
    p = tmp_path / "r.trec"
    p.write_text("q1 Q0 a 1\n")
    with pytest.raises(io.ArtifactError, match=r"r\.trec: malformed TREC run"):
        io.read_trec_run(p)


def test_parquet_columns_reads_the_footer_and_names_a_broken_file(tmp_path: Path) -> None:
    path = tmp_path / "corpus.parquet"
    pl.DataFrame({"doc_id": ["d1"], "text": ["t"]}).write_parquet(path)
    assert io.parquet_columns(path) == ["doc_id", "text"]
    path.write_bytes(path.read_bytes()[:20])
    with pytest.raises(io.ArtifactError, match=r"corpus\.parquet: not a readable Parquet file"):
        io.parquet_columns(path)
