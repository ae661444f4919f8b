"""The shipped collections are checked against their manifests (pipeline/manifest.py): a
deleted, edited or added file stops the loader with the file named and the fix, before
anything is read (issue 32: a deleted Grep-BiasIR category left 20 queries without qrels)."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from pipeline import manifest
from pipeline.data import genderbias_qa, grep_biasir
from pipeline.data.grep_biasir import GrepBiasIRConfig
from pipeline.manifest import ManifestError

FOLDERS = {"Grep-BiasIR": grep_biasir.RESOURCE_DIR, "GenderBias-QA": genderbias_qa.RESOURCE_DIR}


@pytest.mark.parametrize("name", list(FOLDERS))
def test_the_shipped_collections_match_their_manifests(name: str) -> None:
    folder = FOLDERS[name]
    assert manifest.differences(folder) == []
    rows = json.loads((folder / manifest.MANIFEST).read_text())["files"]
    csv_rows = {f: e["rows"] for f, e in rows.items() if f.endswith(".csv")}
    if name == "Grep-BiasIR":  # 117 queries, 702 documents (README, SPEC)
        assert csv_rows.pop("queries.csv") == 117 and sum(csv_rows.values()) == 702
    else:
        assert csv_rows == {"GenderBias-QA_test.csv": 145, "GenderBias-QA_train.csv": 172}


CAREER = "queries-documents_Career.csv"
Breaker = Callable[[Path], None]


def _drop_row(folder: Path) -> None:
    f = folder / CAREER
    lines = f.read_text(encoding="utf-8").splitlines(keepends=True)
    f.write_text("".join(lines[:1] + lines[2:]), encoding="utf-8")


CASES: dict[str, tuple[Breaker, str]] = {
    "deleted": (lambda f: (f / CAREER).unlink(),
                rf"{CAREER} is missing \(shipped: 39092 bytes, 120 data rows\)"),
    "edited": (_drop_row, rf"{CAREER} was changed: \d+ bytes, 119 data rows, sha256 \w+…; "
               r"shipped: 39092 bytes, 120 data rows, sha256 4ea276ac1cfa…"),
    "added": (lambda f: (f / "queries-documents_Extra.csv").write_text("q_id\n"),
              r"queries-documents_Extra\.csv is not a shipped file \(the loader may read it\)"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
def test_a_changed_shipped_file_stops_extract_with_the_file_and_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    copy = tmp_path / "grep_biasir"
    shutil.copytree(grep_biasir.RESOURCE_DIR, copy)
    breaker, words = CASES[case]
    breaker(copy)
    monkeypatch.setattr(grep_biasir, "RESOURCE_DIR", copy)
    monkeypatch.chdir(tmp_path)  # the folder is named relative to the working directory
    with pytest.raises(ManifestError) as caught:
        grep_biasir.extract(GrepBiasIRConfig())  # the `grep-biasir` source of `extract`
    line = str(caught.value)
    fix = (r"delete it" if case == "added"
           else rf"restore it: `git checkout -- 'grep_biasir/{re.escape(CAREER)}'`")  # fmt: skip
    assert "\n" not in line and re.match(
        rf"grep_biasir/{words}: the Grep-BiasIR collection differs from the shipped one "
        rf"\(manifest\.json\); nothing was read\. Fix: {fix}",
        line,
    ), line


def test_a_changed_transfer_file_stops_transfer_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "genderbias_qa"
    shutil.copytree(genderbias_qa.RESOURCE_DIR, copy)
    test_csv = copy / "GenderBias-QA_test.csv"
    test_csv.write_bytes(test_csv.read_bytes().replace(b"captain", b"Captain", 1))
    monkeypatch.setattr(genderbias_qa, "RESOURCE_DIR", copy)
    with pytest.raises(ManifestError, match=r"GenderBias-QA_test\.csv was changed: 434435 "
                       r"bytes, 145 data rows, .*git checkout --"):  # fmt: skip
        genderbias_qa.load_shipped()  # what the `transfer_data` stage reads


def test_crlf_line_ends_of_a_windows_checkout_match(tmp_path: Path) -> None:
    copy = tmp_path / "grep_biasir"
    shutil.copytree(grep_biasir.RESOURCE_DIR, copy)
    f = copy / "queries.csv"
    f.write_bytes(f.read_bytes().replace(b"\n", b"\r\n"))
    assert manifest.differences(copy) == []


def test_the_manifest_is_written_anew_on_request(tmp_path: Path) -> None:
    copy = tmp_path / "genderbias_qa"
    shutil.copytree(genderbias_qa.RESOURCE_DIR, copy)
    (copy / "LICENSE").write_text("changed on purpose\n")
    assert manifest.main([str(copy)]) == 1
    assert manifest.main(["--write", str(copy)]) == 0
    assert manifest.differences(copy) == [] and manifest.main([str(copy)]) == 0
