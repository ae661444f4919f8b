"""The quick check every stage makes first (pipeline/dvc_cache.py): outputs that dvc.lock
records and the workspace holds, but the DVC cache lacks. Read from the files alone; DVC's
own checks confirm it (tests/unit/test_doctor.py, tests/robustness/test_refusals.py)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from pipeline import dvc_cache

ROOT = Path(__file__).resolve().parents[2]


def _from_yaml(text: str) -> list[tuple[str, str, str, bool]]:
    stages = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))["stages"]
    return sorted((name, o["path"], o["md5"], o.get("hash") != "md5")
                  for name, e in stages.items() for o in e.get("outs", []))  # fmt: skip


def test_the_line_reader_reads_dvc_lock_as_yaml_does() -> None:
    text = (ROOT / "dvc.lock").read_text()
    assert sorted(dvc_cache.lock_outputs(text)) == _from_yaml(text)
    odd = """schema: '2.0'
stages:
  'train@a b':
    cmd: python -m stages.train 'a b'
    deps:
    - path: x.txt
      hash: md5
      md5: 1111111111111111111111111111111f
    outs:
    - path: 'models/a b'
      hash: md5
      md5: 2222222222222222222222222222222f.dir
      size: 3
      nfiles: 1
    - path: old.txt
      md5: 3333333333333333333333333333333f
  score:
    outs:
    - path: data/s.parquet
      hash: md5
      md5: 4444444444444444444444444444444f
"""
    assert sorted(dvc_cache.lock_outputs(odd)) == _from_yaml(odd) == [
        ("score", "data/s.parquet", "4" * 31 + "f", False),
        ("train@a b", "models/a b", "2" * 31 + "f.dir", False),
        ("train@a b", "old.txt", "3" * 31 + "f", True),  # a DVC 2 entry: no `hash: md5`
    ]


DVC_YAML = """stages:
  a:
    cmd: x
    outs:
      - a.txt
      - tree
    metrics:
      - m.json:
          cache: false
  train:
    foreach: [p, q]
    do:
      cmd: y
      outs:
        - models/${item}.txt
      plots:
        - live/${key}.tsv:
            cache: false
"""


def _entry(path: str, md5: str) -> dict[str, str]:
    return {"path": path, "hash": "md5", "md5": md5}


def test_suspects_are_outputs_in_place_whose_objects_the_cache_lacks(tmp_path: Path) -> None:
    (tmp_path / "dvc.yaml").write_text(DVC_YAML)
    (tmp_path / ".dvc").mkdir()
    (tmp_path / ".dvc/config.local").write_text("[cache]\n    dir = ../../shared-cache\n")
    cache = tmp_path.parent / "shared-cache/files/md5"  # relative to .dvc/, as DVC writes it
    objects = {"a.txt": "a" * 32, "tree": "b" * 31 + "0.dir", "m.json": "c" * 32,
               "models/p.txt": "d" * 32, "models/q.txt": "e" * 32, "live/p.tsv": "f" * 32,
               "tree/1": "1" * 32, "tree/2": "2" * 32}  # fmt: skip
    lock = {"schema": "2.0", "stages": {
        "a": {"outs": [_entry(p, objects[p]) for p in ("a.txt", "tree", "m.json")]},
        "train@p": {"outs": [_entry("models/p.txt", objects["models/p.txt"]),
                             _entry("live/p.tsv", objects["live/p.tsv"])]},
        "train@q": {"outs": [_entry("models/q.txt", objects["models/q.txt"])]},
    }}  # fmt: skip
    (tmp_path / "dvc.lock").write_text(yaml.safe_dump(lock, sort_keys=False))
    for path in ("a.txt", "tree/1", "tree/2", "m.json", "models/p.txt", "live/p.tsv"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(path)  # models/q.txt is not in the workspace

    def put(md5: str, text: str = "") -> None:
        (cache / md5[:2]).mkdir(parents=True, exist_ok=True)
        (cache / md5[:2] / md5[2:]).write_text(text)

    for p in ("a.txt", "tree/1", "models/p.txt"):
        put(objects[p])
    listing = [{"md5": objects[f"tree/{i}"], "relpath": str(i)} for i in (1, 2)]
    put(objects["tree"], json.dumps(listing))  # the listing, but tree/2 is missing
    # m.json and live/p.tsv are `cache: false`; models/q.txt is not in place
    assert dvc_cache.suspects(tmp_path) == {("a", "tree")}
    put(objects["tree/2"])
    assert dvc_cache.suspects(tmp_path) == set()
    (cache / objects["a.txt"][:2] / objects["a.txt"][2:]).unlink()
    assert dvc_cache.suspects(tmp_path) == {("a", "a.txt")}


def test_nothing_is_checked_under_no_commit(tmp_path: Path) -> None:
    """`dvc repro --no-commit` keeps outputs out of the cache on purpose: the stages it runs
    (its children) check nothing."""
    import subprocess
    import sys

    code = "from pipeline.dvc_cache import _no_commit; print(_no_commit())"
    for flag, expected in (("--no-commit", "True"), ("--force", "False")):
        parent = [  # stands for `dvc repro <flag>`, whose stage runs `python -c ...`
            "sh", "-c", f'"{sys.executable}" -c "{code}"', "dvc", flag
        ]  # fmt: skip
        out = subprocess.run(parent, cwd=ROOT, capture_output=True, text=True, check=True)
        assert out.stdout.strip() == expected, out
