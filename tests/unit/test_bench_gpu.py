"""benchmarks/bench_gpu.py (issue 30's GPU measurement): on a machine without a GPU it stops
with a clear message and writes nothing; its FLOP count and peaks; its measurement runs
end to end on the CPU, so a session that gets a GPU can run it at once."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
import torch

from benchmarks import bench_gpu


def test_without_a_gpu_it_says_so_and_writes_nothing(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    out = tmp_path / "gpu.jsonl"
    with caplog.at_level(logging.ERROR, logger="benchmarks.gpu"):
        assert bench_gpu.main(["--out", str(out)]) == 2
    assert "measures on an NVIDIA GPU, and none is visible here" in caplog.text
    assert "Nothing was measured or written" in caplog.text
    assert not out.exists()


def test_flops_and_peaks() -> None:
    # one 10-token pair through BERT-mini: 4 layers × (2·(4·256² + 2·256·1024)·10 + 4·256·100)
    assert bench_gpu.pair_flops(np.array([10]), "bert-mini") == 4 * (2 * 786432 * 10 + 102400)
    assert bench_gpu.peak_tflops("NVIDIA H100 80GB HBM3") == 989.0
    assert bench_gpu.peak_tflops("NVIDIA H100 PCIe") == 756.0
    assert bench_gpu.peak_tflops("NVIDIA A100-SXM4-80GB") == 312.0
    assert bench_gpu.peak_tflops("Tesla T4") is None


@pytest.mark.slow
def test_the_measurement_runs_end_to_end_on_the_cpu(tmp_path: Path) -> None:
    path = bench_gpu.random_model("bert-mini", tmp_path)
    for part in bench_gpu.SIDES:
        row = bench_gpu.measure(path, "bert-mini", 4, part, 8, 1, None, device="cpu")
        assert row["pairs"] == 16 and row["ours_pairs_s"][0] > 0 and row["lean_pairs_s"][0] > 0
        assert row["ours_tflops"] > 0 and row["ours_share_of_peak"] is None
