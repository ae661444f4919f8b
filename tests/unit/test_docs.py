"""Docs that cannot drift (pipeline/report/docs.py): every fenced block of README.md and
docs/*.md is marked with how it is kept true, and each mark is checked here: commands are
run and their pasted outputs compared, recorded outputs are checked against the committed
dvc.lock, `dvc exp run -S` keys and params excerpts are validated, the results table is
the committed summary."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.report import doc_numbers, doc_values, docs, stage_graph
from pipeline.report.readme import embed, embed_controls

ROOT = Path(__file__).resolve().parents[2]
FILES = docs.doc_files(ROOT)
WITH_EXEC = [p for p in FILES if any(b.kind == "exec" for b in docs.parse(p))]
WITH_RECORDED = [p for p in FILES if any(b.kind == "recorded" for b in docs.parse(p))]
PARAMS = [b for p in FILES for b in docs.parse(p) if b.kind == "params"]
TESTED_BY = [b for p in FILES for b in docs.parse(p) if b.kind == "tested-by"]


def test_every_block_is_marked() -> None:
    assert docs.unmarked(FILES) == []


@pytest.mark.slow
@pytest.mark.parametrize("path", WITH_EXEC, ids=lambda p: p.name)
def test_pasted_outputs_are_what_the_commands_print(path: Path) -> None:
    assert docs.output_mismatches(path, docs.exec_outputs(path)) == []


@pytest.mark.parametrize("path", WITH_RECORDED, ids=lambda p: p.name)
def test_recorded_outputs_come_from_the_committed_default(path: Path) -> None:
    """Outputs that need the default run's models are recorded by
    `python -m pipeline.report.docs --record` after `dvc repro`; their stamp must match
    the committed dvc.lock, or they come from an older default."""
    assert docs.stale_recordings(path) == []


@pytest.mark.parametrize("block", PARAMS, ids=lambda b: b.where)
def test_experiment_commands_and_params_excerpts_are_valid(block: docs.Block) -> None:
    assert docs.params_problems(block, ROOT) == []


@pytest.mark.parametrize("block", TESTED_BY, ids=lambda b: b.where)
def test_the_test_that_runs_a_command_exists(block: docs.Block) -> None:
    assert docs.tested_by_problems(block, ROOT) == []


@pytest.mark.slow
def test_every_marked_number_is_what_its_source_gives() -> None:
    """Each `<!-- value NAME -->…<!-- /value -->` of the docs and benchmarks/README.md equals
    what its source computes now (benchmarks/results, params.yaml, dvc.yaml, dvc.lock, the
    committed `dvc exp show`)."""
    problems = [p for path in docs.value_files(ROOT) for p in doc_values.value_problems(path)]
    assert problems == []


def test_no_number_about_runs_stands_unmarked_in_prose() -> None:
    problems = [p for path in FILES for p in doc_numbers.unmarked_numbers(
        path, doc_numbers.NOT_RESULTS)]  # fmt: skip
    assert problems == []
    assert doc_numbers.unused_exemptions(FILES, doc_numbers.NOT_RESULTS) == []


def test_values_are_checked_rewritten_and_unmarked_numbers_named(tmp_path: Path) -> None:
    path = _doc(tmp_path, (
        "Methods: <!-- value params.methods -->3<!-- /value -->; it took 12 min.\n"
        "| a table row: 5 min |\n```\n9 s in code\n```\n"
    ))  # fmt: skip
    want = doc_values.computed("params.methods", ROOT)
    (problem,) = doc_values.value_problems(path, ROOT)
    assert f"value 'params.methods' is '3', its source gives '{want}'" in problem
    (unmarked,) = doc_numbers.unmarked_numbers(path, {})
    assert unmarked.startswith("doc.md:1: '12 min' is a number about runs")
    assert doc_numbers.unmarked_numbers(path, {"doc.md": [("it took 12 min", "dated")]}) == []
    path.write_text(doc_values.rewrite(path.read_text(), ROOT))
    assert doc_values.value_problems(path, ROOT) == []
    bad = _doc(tmp_path, "<!-- value no.such -->1<!-- /value -->\n")
    assert "unknown value 'no.such'" in doc_values.value_problems(bad, ROOT)[0]


def test_rerun_lists_follow_the_stage_graph() -> None:
    """What the README says a change reruns is the params slices and dvc.yaml's graph: a
    method's λ reruns its own train/evaluate and the report (its order stage does not read
    the loss terms); `candidates.top_k` every stage downstream of the candidates, training
    included (the train stage reranks); `train.workers` nothing."""
    lam = doc_values.computed("dvc.rerun.methods.penalty_irrelevant.loss.penalty.lambda", ROOT)
    assert lam == ("`train@penalty_irrelevant`, `evaluate@penalty_irrelevant` and "
                   "`report`")  # fmt: skip
    assert stage_graph.reruns(ROOT, "train.workers") == []
    top_k = doc_values.computed("dvc.rerun.candidates.top_k", ROOT)
    assert "`train@` of every method" in top_k and "`extract`" not in top_k
    quick = stage_graph.upstream(ROOT, doc_values.quick_targets(ROOT))
    assert {"extract", "transfer_data", "features", "train@baseline"} <= set(quick)
    assert not any(s.startswith("train@") and "lws" in s for s in quick)


def test_results_table_is_the_committed_summary() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    summary = (ROOT / "metrics" / "summary.md").read_text(encoding="utf-8")
    assert embed(readme, summary) == readme, "run `python -m pipeline.report.docs --write`"


def test_decisions_controls_section_is_the_committed_summary() -> None:
    """docs/decisions.md, "What the controls show": the summary's Controls section."""
    decisions = (ROOT / "docs" / "decisions.md").read_text(encoding="utf-8")
    summary = (ROOT / "metrics" / "summary.md").read_text(encoding="utf-8")
    assert embed_controls(decisions, summary) == decisions, (
        "run `python -m pipeline.report.docs --write`"
    )


# --- the mechanism itself, on small documents -------------------------------------------


def _doc(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "doc.md"
    path.write_text(text, encoding="utf-8")
    return path


EXAMPLE = """intro
<!-- doc: exec hello -->
```bash
mkdir -p /tmp/x && printf 'a 1\\nb 2\\nc 3\\nd 4\\n' | tee /tmp/x/out.txt
```
<!-- doc: output hello select=^(a|d) -->
```
a 1
...
d 4
```
<!-- doc: exec again -->
```python
print(open("/tmp/x/out.txt").read().split()[-1])
```
<!-- doc: output again -->
```
4
```
"""


def test_outputs_match_and_a_stale_one_is_named(tmp_path: Path) -> None:
    path = _doc(tmp_path, EXAMPLE)
    outputs = docs.exec_outputs(path)
    assert outputs["again"] == "4\n"  # the second block saw the first one's sandbox
    assert docs.output_mismatches(path, outputs) == []
    stale = _doc(tmp_path, EXAMPLE.replace("d 4\n```", "d 5\n```"))
    (problem,) = docs.output_mismatches(stale, docs.exec_outputs(stale))
    assert "doc.md:7: output 'hello' differs" in problem and "d 4" in problem


def test_write_refreshes_outputs(tmp_path: Path) -> None:
    path = _doc(tmp_path, EXAMPLE.replace("d 4\n```", "d 5\n```").replace("\n4\n```", "\n0\n```"))
    docs.write([path], root=ROOT)
    assert path.read_text(encoding="utf-8") == EXAMPLE


def test_unmarked_and_mismarked_blocks_are_named(tmp_path: Path) -> None:
    path = _doc(tmp_path, "text\n```bash\nls\n```\n<!-- doc: template -->\n```python\nx = 1\n```\n")
    problems = docs.unmarked([path])
    assert len(problems) == 2
    assert "doc.md:2: fenced block without a `<!-- doc: KIND ... -->` marker" in problems[0]
    assert "a `template` without a <placeholder>" in problems[1]
    with pytest.raises(docs.DocError, match="unknown docs marker kind 'run'"):
        docs.parse(_doc(tmp_path, "<!-- doc: run x -->\n```\n```\n"))


def test_a_recording_from_another_default_is_stale(tmp_path: Path) -> None:
    lock = tmp_path / "dvc.lock"
    lock.write_text(
        "schema: '2.0'\nstages:\n  train@m:\n    outs:\n    - path: models/m\n"
        "      md5: aaaa.dir\n"
    )
    stamp = docs.stamp(["models/m"], lock)
    text = (
        "<!-- doc: command c -->\n```bash\nls models/m\n```\n"
        f"<!-- doc: recorded c deps=models/m stamp={stamp} -->\n```\nx\n```\n"
    )
    path = _doc(tmp_path, text)
    assert docs.stale_recordings(path, lock) == []
    lock.write_text(lock.read_text().replace("aaaa", "bbbb"))
    (problem,) = docs.stale_recordings(path, lock)
    assert "recorded 'c' comes from other outputs than the committed dvc.lock has" in problem
    unrecorded = _doc(tmp_path, text.replace(f" stamp={stamp}", ""))
    assert docs.stale_recordings(unrecorded, lock)


def test_experiment_keys_are_validated(tmp_path: Path) -> None:
    good = docs.parse(_doc(tmp_path, "```bash\ndvc exp run -S 'train.lr=1e-4'\n```\n"))[0]
    assert docs.params_problems(good, ROOT) == []
    bad = docs.parse(_doc(tmp_path, "```bash\ndvc exp run -S 'train.lrr=1e-4'\n```\n"))[0]
    (problem,) = docs.params_problems(bad, ROOT)
    assert "lrr" in problem


def test_head_row_is_shown_as_main() -> None:
    table = "| Experiment   | m   |\n| workspace    | 1   |\n| issue-23     | 1   |\n"
    assert docs.as_head(table, "issue-23", "main").splitlines()[2] == "| main         | 1   |"


def test_record_runs_commands_stamps_them_and_restores_the_workspace(tmp_path: Path) -> None:
    """`--record` in a repository: the command's output is pasted, stamped with dvc.lock's
    hashes of its deps, and what the command changed (params.yaml here) is restored."""
    import subprocess

    repo = tmp_path / "repo"
    (repo / "metrics").mkdir(parents=True)
    (repo / "params.yaml").write_text("a: 1\n")
    (repo / "metrics" / "m.json").write_text("{}\n")
    (repo / "dvc.lock").write_text(
        "schema: '2.0'\nstages:\n  train@m:\n    outs:\n    - path: models/m\n"
        "      md5: cccc.dir\n"
    )
    for args in (["init", "-q"], ["add", "-A"],
                 ["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "c"]):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)  # fmt: skip
    doc = _doc(tmp_path, (
        "<!-- doc: command c -->\n```bash\necho 'a: 2' > params.yaml && echo printed\n```\n"
        "<!-- doc: recorded c deps=models/m -->\n```\n(not recorded)\n```\n"
    ))  # fmt: skip
    docs.write([doc], record=True, root=repo)
    text = doc.read_text(encoding="utf-8")
    assert "```\nprinted\n```" in text
    assert f"deps=models/m stamp={docs.stamp(['models/m'], repo / 'dvc.lock')} -->" in text
    assert docs.stale_recordings(doc, repo / "dvc.lock") == []
    assert (repo / "params.yaml").read_text() == "a: 1\n"
    (repo / "params.yaml").write_text("a: 3\n")  # uncommitted params: refuse to record
    with pytest.raises(docs.DocError, match="commit or stash"):
        docs.write([doc], record=True, root=repo)
