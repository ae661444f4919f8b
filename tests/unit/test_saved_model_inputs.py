"""A saved model directory is a function of the training inputs only.

A fast tokenizer keeps the truncation and padding of its last call, and `save_pretrained`
writes them into `tokenizer.json`. A run resumed after its final checkpoint tokenises nothing
before saving; it used to save the checkpoint's shipped settings (max_length 128, fixed
padding) where an uninterrupted run saved the lengths of its last call (issue 24).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.unit.tiny_rankers import ARCHS, tiny_ranker


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}  # fmt: skip


@pytest.mark.parametrize("arch", ARCHS)
def test_what_was_tokenised_last_does_not_reach_the_saved_directory(
    arch: str, tmp_path: Path
) -> None:
    untouched = tiny_ranker(arch, seed=5)  # a resumed run at its last step: no tokenising
    used = tiny_ranker(arch, seed=5)
    used.score_many(["q0", "q1"], ["d0", "d1"], batch_size=2)  # queries last: q_len 8
    used.single_tokens(["a query"], 3)  # and a length no model setting has
    a, b = untouched.save(tmp_path / "a"), used.save(tmp_path / "b")
    assert _files(a) == _files(b)
    saved = json.loads((a / "tokenizer.json").read_text())
    assert saved["truncation"]["max_length"] == untouched.cfg.max_len == 32
    assert saved["padding"] is None


def test_tokenising_after_a_save_still_uses_the_callers_lengths() -> None:
    ranker = tiny_ranker("bi_encoder")
    long = " ".join(["word"] * 100)
    assert [len(ids) for ids, _ in ranker.single_tokens([long, long], 5)] == [5, 5]
    assert len(ranker.single_tokens([long], ranker.cfg.max_len)[0][0]) == 32
