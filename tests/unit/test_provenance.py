"""Runs carry their provenance: an ir_metadata block (PRIMAD, schema 0.1) beside the plain run
(`run.trec.ir_metadata.yaml`); a run annotated in-file, as the schema describes, is read too."""

from __future__ import annotations

import gzip
import hashlib
import subprocess
from importlib import metadata as importlib_metadata
from pathlib import Path

import polars as pl
import yaml

from pipeline import io
from pipeline.params import load_params
from pipeline.provenance import _public_url, build_metadata, read_metadata, source

ROOT = Path(__file__).resolve().parents[2]
LOCK = """
schema: '2.0'
stages:
  extract:
    cmd: python -m stages.extract
    outs:
    - path: data/corpus.parquet
      hash: md5
      md5: 0123456789abcdef0123456789abcdef
  train@baseline:
    cmd: python -m stages.train baseline
    outs:
    - path: models/baseline
      hash: md5
      md5: fedcba9876543210fedcba9876543210.dir
"""


def _run() -> pl.DataFrame:
    return pl.DataFrame(
        {"query_id": ["1", "1", "2"], "doc_id": ["a", "b", "c"], "score": [2.0, 1.0, 0.5],
         "rank": [1, 2, 1]}
    )  # fmt: skip


def test_metadata_is_written_beside_a_plain_run(tmp_path: Path) -> None:
    (tmp_path / "dvc.lock").write_text(LOCK)
    params = load_params(ROOT / "params.yaml")
    meta = build_metadata(params, "baseline", lock_path=tmp_path / "dvc.lock", root=tmp_path)
    path = tmp_path / "run.trec"
    io.write_trec_run(_run(), path, tag="baseline", metadata=meta)
    lines = ["1 Q0 a 1 2 baseline", "1 Q0 b 2 1 baseline", "2 Q0 c 1 0.5 baseline"]
    assert path.read_text().splitlines() == lines
    side = tmp_path / "run.trec.ir_metadata.yaml"
    block = yaml.safe_load(side.read_text())
    assert block == meta == read_metadata(path)
    assert block["schema-version"] == 0.1 and block["tag"] == "baseline"
    assert set(block) >= {"platform", "implementation", "method", "data"}
    rerank = block["method"]["retrieval"][1]
    assert rerank["checkpoint"]["md5"] == "fedcba9876543210fedcba9876543210.dir"
    loss = params.methods["baseline"].settings()["loss"]
    assert rerank["params"]["loss"] == loss == {"margin": {"margin": 1.0}}
    assert block["data"]["other"][0]["md5"] == "0123456789abcdef0123456789abcdef"
    assert block["data"]["test collection"]["name"] == params.dataset.name
    assert "doc id descending (trec_eval)" in block["method"]["score ties"]
    assert io.read_trec_run(path).equals(_run().select("query_id", "doc_id", "score", "rank"))
    plain = tmp_path / "plain.trec"
    io.write_trec_run(_run(), plain, tag="baseline")
    assert read_metadata(plain) is None and plain.read_text() == path.read_text()
    # the in-file form of the schema: `#` lines the pipeline's reader skips
    annotated = tmp_path / "annotated.trec"
    annotated.write_text("\n".join(io.ir_metadata_lines(meta)) + "\n" + path.read_text())
    assert read_metadata(annotated) == meta
    assert io.read_trec_run(annotated).equals(io.read_trec_run(path))


def test_environment_records_the_lock_and_what_differs(tmp_path: Path) -> None:
    """The run's platform names the lock file's hash and every installed package whose
    version differs from its pin (none on a machine set up by scripts/setup.sh)."""
    params = load_params(ROOT / "params.yaml")
    assert "environment" not in build_metadata(params, "baseline", root=tmp_path)["platform"][
        "software"
    ]
    yaml_version = importlib_metadata.version("pyyaml")
    lock = (
        "polars==0.0.1 \\\n    --hash=sha256:00\nnot-installed-pkg==1.0\n"
        f"pyyaml=={yaml_version}\n"
    )
    (tmp_path / "requirements.lock").write_text(lock)
    env = build_metadata(params, "baseline", root=tmp_path)["platform"]["software"]["environment"]
    assert env["lock"] == "requirements.lock"
    assert env["sha256"] == hashlib.sha256(lock.encode()).hexdigest()
    assert env["differs"] == [
        "not-installed-pkg==missing (locked 1.0)",
        f"polars=={importlib_metadata.version('polars')} (locked 0.0.1)",
    ]


def test_gzipped_run_with_block_is_read(tmp_path: Path) -> None:
    params = load_params(ROOT / "params.yaml")
    text = "\n".join(io.ir_metadata_lines(build_metadata(params, "baseline", root=tmp_path)))
    path = tmp_path / "run.trec.gz"
    path.write_bytes(gzip.compress((text + "\n1 Q0 a 1 2.0 t\n1 Q0 b 2 1.0 t\n").encode()))
    assert io.read_trec_run(path)["doc_id"].to_list() == ["a", "b"]
    assert read_metadata(path)["tag"] == "baseline"  # type: ignore[index]


def test_metadata_is_deterministic_and_names_no_machine(tmp_path: Path) -> None:
    params = load_params(ROOT / "params.yaml")
    first = build_metadata(params, "baseline", lock_path=tmp_path / "none", root=tmp_path)
    assert first == build_metadata(params, "baseline", lock_path=tmp_path / "none", root=tmp_path)
    text = yaml.safe_dump(first)
    assert "hardware" not in text and "commit" not in text and "checkpoint" not in text
    zero = build_metadata(params, "zero-shot", root=tmp_path)["method"]["retrieval"][1]
    assert "fine-tuned" not in zero["method"] and "loss" not in zero["params"]


def test_model_trained_in_the_same_stage_is_hashed_not_read_from_a_stale_lock(
    tmp_path: Path,
) -> None:
    (tmp_path / "dvc.lock").write_text(LOCK)  # the previous run's models/baseline hash
    params = load_params(ROOT / "params.yaml")
    models = tmp_path / "models" / "baseline"
    (models / "fold-0").mkdir(parents=True)
    (models / "fold-0" / "model.safetensors").write_bytes(b"weights")

    def checkpoint() -> dict[str, str]:
        meta = build_metadata(params, "baseline", lock_path=tmp_path / "dvc.lock",
                              root=tmp_path, model_dir=models)  # fmt: skip
        assert meta["implementation"]["executable"]["cmd"] == "python -m stages.train baseline"
        return dict(meta["method"]["retrieval"][1]["checkpoint"])

    first = checkpoint()
    assert "md5" not in first and len(first["content_md5"]) == 32
    assert first == checkpoint()  # deterministic
    (models / "fold-0" / "model.safetensors").write_bytes(b"other weights")
    assert checkpoint()["content_md5"] != first["content_md5"]


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def test_source_names_the_stage_digest_and_never_the_checkout(tmp_path: Path) -> None:
    """A run names the code by its stage's digest file: two checkouts (another commit, a
    remote, an edit to a file the stage does not run) write the same block; the commit,
    remote and dirty flag only with commit=True (issue 41)."""
    for name in ("pipeline", "stages"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "a.py").write_text("x = 1\n")
    digest = tmp_path / "data" / "code" / "train@baseline.txt"
    digest.parent.mkdir(parents=True)
    digest.write_text("0123  pipeline/a.py\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "-c", "user.email=t@t", "-c", "user.name=t", "add", "-A")
    _git(tmp_path, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "c")
    first = source(tmp_path, "train@baseline")
    md5 = hashlib.md5(b"0123  pipeline/a.py\n").hexdigest()  # by hand: the file's bytes
    assert first == {"lang": ["python"],
                     "code": {"digest": "data/code/train@baseline.txt", "md5": md5}}
    (tmp_path / "stages" / "a.py").write_text("x = 2\n")  # not in the digest
    _git(tmp_path, "remote", "add", "origin", "https://example.org/fair.git")
    _git(tmp_path, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qam", "d")
    assert source(tmp_path, "train@baseline") == first
    assert source(tmp_path) == {"lang": ["python"]}  # outside a stage: no digest
    full = source(tmp_path, "train@baseline", commit=True)
    assert len(full["commit"]) == 40 and full["repository"] == "https://example.org/fair.git"
    (tmp_path / "pipeline" / "a.py").write_text("x = 3\n")
    assert source(tmp_path, commit=True)["dirty"] is True



def test_remote_urls_lose_credentials_and_local_paths() -> None:
    assert _public_url("https://user:tok@github.com/o/r.git") == "https://github.com/o/r.git"
    assert _public_url("git@github.com:o/r.git") == "git@github.com:o/r.git"
    assert _public_url("/srv/git/fair-ranking") is None and _public_url(None) is None
