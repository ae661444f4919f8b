"""A full disk (ENOSPC) while writing any artifact: one line naming the file being written and
the space it needs, and nothing half-written (the previous version, if any, stays intact).

ENOSPC is simulated: the library's write fills part of the file, then fails as a full disk
does. tests/robustness/test_disk_full_stages.py does the same inside real stage processes.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import torch
from safetensors import SafetensorError

from pipeline import io, schemas
from pipeline.errors import is_disk_full
from pipeline.train import checkpoint
from stages.common import run_stage
from tests.unit.tiny_rankers import tiny_ranker

ENOSPC = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
SAFETENSORS_ENOSPC = (  # the message safetensors' Rust writer gives (seen in issue 24)
    'Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: "No space '
    'left on device" })'
)


def _full_disk(*args: Any, **kwargs: Any) -> None:
    """Write 512 bytes to the first path argument, then fail as a full disk."""
    path = next(a for a in args if isinstance(a, str | Path))
    with open(path, "wb") as f:  # not Path.write_bytes: a test replaces it
        f.write(b"\0" * 512)
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))


def _one_line(error: BaseException, path: Path) -> str:
    text = str(error)
    assert "\n" not in text
    assert text.startswith(f"{path}: no space left on device while writing it")
    assert re.search(r"it needs (about|more than) \d+(\.\d)? (B|KiB|MiB|GiB)", text), text
    assert re.search(r"\d+(\.\d)? (B|KiB|MiB|GiB|TiB) free in ", text), text
    return text


def _listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize(
    "error",
    [ENOSPC, SafetensorError(SAFETENSORS_ENOSPC), RuntimeError("write failed")],
    ids=["oserror", "safetensors", "torch-wrapped"],
)
def test_enospc_is_recognised_whichever_library_raised_it(error: Exception) -> None:
    if isinstance(error, RuntimeError):
        error.__cause__ = ENOSPC  # torch re-raises the OSError of the file object
    assert is_disk_full(error)
    assert not is_disk_full(OSError(errno.EACCES, "Permission denied"))


def test_parquet_write_on_a_full_disk_keeps_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dest = tmp_path / "run.parquet"
    old = pl.DataFrame({"query_id": ["q"], "doc_id": ["d"], "score": [1.0], "rank": [1]})
    io.write_table(old, dest, schemas.RUN)
    before = dest.read_bytes()
    n = 1000
    new = pl.DataFrame(
        {"query_id": ["q"] * n, "doc_id": [f"d{i}" for i in range(n)],
         "score": [float(i) for i in range(n)], "rank": list(range(1, n + 1))}
    )  # fmt: skip
    monkeypatch.setattr(io.pq, "write_table", _full_disk)
    with pytest.raises(io.DiskFullError) as caught:
        io.write_table(new, dest, schemas.RUN)
    text = _one_line(caught.value, dest)
    needed = schemas.validate(new.to_arrow(), schemas.RUN, "run").nbytes  # the table's size
    assert f"about {io.size_text(needed)}" in text
    assert dest.read_bytes() == before and _listing(tmp_path) == ["run.parquet"]


def test_json_write_on_a_full_disk_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dest = tmp_path / "metrics.json"
    monkeypatch.setattr(Path, "write_bytes", lambda self, data: _full_disk(self))
    with pytest.raises(io.DiskFullError) as caught:
        io.write_json({"MRR@10": 0.5}, dest)
    size = len(json.dumps({"MRR@10": 0.5}, indent=2)) + 1  # the exact JSON text
    assert f"needs about {size} B" in _one_line(caught.value, dest)
    assert _listing(tmp_path) == []


def test_model_save_on_a_full_disk_is_one_line_and_keeps_the_old_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ranker = tiny_ranker("bi_encoder")
    out = ranker.save(tmp_path / "fold-0")
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}

    def full(*args: Any, **kwargs: Any) -> None:
        Path(args[0], "model.safetensors").write_bytes(b"\0" * 512)  # a partial weights file
        raise SafetensorError(SAFETENSORS_ENOSPC)

    monkeypatch.setattr(ranker.encoder, "save_pretrained", full)
    with pytest.raises(io.DiskFullError) as caught:
        ranker.save(out)
    weights = sum(t.numel() * t.element_size() for t in ranker.encoder.state_dict().values())
    assert f"about {io.size_text(weights + 2 * 2**20)}" in _one_line(caught.value, out)
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["fold-0"]  # no temporary directory left


def test_checkpoint_on_a_full_disk_keeps_the_previous_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = checkpoint.save_checkpoint(tmp_path, {"step": 2, "w": torch.zeros(4)})
    before = path.read_bytes()

    def full(obj: Any, f: Any) -> None:
        f.write(b"\0" * 512)
        raise RuntimeError("[enforce fail at inline_container.cc] file write failed") from ENOSPC

    monkeypatch.setattr(checkpoint.torch, "save", full)
    with pytest.raises(io.DiskFullError) as caught:
        checkpoint.save_checkpoint(tmp_path, {"step": 4, "w": torch.zeros(1024)})
    assert "needs about 4.0 KiB" in _one_line(caught.value, path)
    assert path.read_bytes() == before and _listing(tmp_path) == ["checkpoint.pt"]


def test_a_stage_ends_a_library_enospc_with_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A full disk in a write that is not ours (a library's own file) still ends the stage
    with one line naming the file, not a traceback."""
    target = tmp_path / "cache.bin"

    def main(argv: Sequence[str] | None) -> None:
        _full_disk(target)

    with caplog.at_level(logging.ERROR), pytest.raises(SystemExit) as stop:
        run_stage(main)
    assert stop.value.code == 1
    (line,) = [r.getMessage() for r in caplog.records]
    assert line.startswith(f"{target}: no space left on device") and "dvc repro" in line


# --- EFBIG and EDQUOT, and fixes that fit the command (issue 32) ------------------------------

LIMITS = {  # errno → what the line says, and the fix
    errno.EFBIG: (r"file too large \(EFBIG: over the file system's largest file or the "
                  r"process's file-size limit, `ulimit -f`\)", "raise `ulimit -f`"),
    errno.EDQUOT: (r"disk quota exceeded \(EDQUOT: your quota on that file system is used up",
                   "Free space in your quota"),
}  # fmt: skip


@pytest.mark.parametrize("code", list(LIMITS), ids=["EFBIG", "EDQUOT"])
def test_a_file_size_limit_or_quota_is_one_line_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    dest = tmp_path / "metrics.json"

    def limited(self: Path, data: bytes) -> None:
        raise OSError(code, os.strerror(code), str(self))

    monkeypatch.setattr(Path, "write_bytes", limited)
    with pytest.raises(io.DiskFullError) as caught:
        io.write_json({"MRR@10": 0.5}, dest)
    text, (words, fix) = str(caught.value), LIMITS[code]
    assert "\n" not in text and re.match(rf"{re.escape(str(dest))}: {words}", text), text
    assert "while writing it (it needs about" in text and fix in text, text
    assert text.endswith("rerun `dvc repro`.") and _listing(tmp_path) == []


@pytest.mark.parametrize("code", list(LIMITS), ids=["EFBIG", "EDQUOT"])
def test_a_stage_ends_a_library_efbig_or_edquot_with_one_line(
    caplog: pytest.LogCaptureFixture, code: int
) -> None:
    """torch's writer raises its own error from the OSError (issue 32: `File too large`,
    then `RuntimeError … unexpected pos`, as a traceback)."""

    def main(argv: Sequence[str] | None) -> None:
        try:
            raise OSError(code, os.strerror(code), "models/x/model.safetensors")
        except OSError as e:
            raise RuntimeError("[enforce fail at inline_container.cc] unexpected pos 64") from e

    with caplog.at_level(logging.ERROR), pytest.raises(SystemExit) as stop:
        run_stage(main)
    assert stop.value.code == 1
    (line,) = [r.getMessage() for r in caplog.records]
    words, fix = LIMITS[code]
    assert re.match(rf"models/x/model\.safetensors: {words}", line) and fix in line, line
    assert "the stage failed, so DVC records none of its outputs" in line


def test_the_checkpoint_line_does_not_send_the_user_to_the_dvc_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(obj: Any, f: Any) -> None:
        raise RuntimeError("file write failed") from ENOSPC

    monkeypatch.setattr(checkpoint.torch, "save", full)
    with pytest.raises(io.DiskFullError) as caught:
        checkpoint.save_checkpoint(tmp_path, {"step": 4, "w": torch.zeros(4)})
    text = _one_line(caught.value, tmp_path / "checkpoint.pt")
    assert "dvc cache" not in text and text.endswith("Free space there and rerun `dvc repro`.")


def test_fair_eval_hints_never_mention_params_or_dvc(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A missing run file and a full disk under --out: fixes for a fair-eval user."""
    from pipeline.evaluate_run import main as fair_eval

    qrels, corpus, run = tmp_path / "qrels.txt", tmp_path / "corpus.tsv", tmp_path / "run.trec"
    qrels.write_text("q1 0 d1 1\n")
    corpus.write_text("d1\tshe is a nurse\nd2\the is a pilot\n")
    argv = ["--qrels", str(qrels), "--corpus", str(corpus), "--cutoffs", "10"]
    with caplog.at_level(logging.ERROR):
        assert fair_eval([str(tmp_path / "missing.trec"), *argv]) == 2
    run.write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\n")
    monkeypatch.setattr(Path, "write_bytes", lambda self, data: _full_disk(self))
    with caplog.at_level(logging.ERROR):
        assert fair_eval([str(run), *argv, "--out", str(tmp_path / "m.json")]) == 2
    missing, full = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert missing == f"{tmp_path / 'missing.trec'}: file not found. Check the path given on " \
        "the command line."
    assert "no space left on device" in full and full.endswith("and rerun fair-eval.")
    for line in (missing, full):
        assert "params.yaml" not in line and "dvc" not in line.lower(), line
