"""The fix commands of the offline errors, run by the real `ir_datasets` command offline on the
miniature cache (`tests/irds_miniature.py`): each is accepted and reads what it promises."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import ir_datasets
import pytest

from pipeline.data import irds, msmarco, trec_fair
from tests.conftest import Miniature, NoNetwork

NEEDS = {
    "msmarco-passage": msmarco.NEEDS,
    "trec-fair-2022": [(trec_fair.DATASET_ID, e) for e in trec_fair.ENTITIES],
}


def shell(command: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    full = {**os.environ, **env, "PATH": path}
    return subprocess.run(
        ["bash", "-c", command], env=full, capture_output=True, text=True, timeout=300
    )


@pytest.mark.slow
@pytest.mark.parametrize("source", sorted(NEEDS))
def test_fix_commands_run_offline_on_the_cache(
    source: str, miniature: Miniature, no_network: NoNetwork
) -> None:
    """`ir_datasets export` commands exit 0 reading the cache; `curl` commands write exactly
    the files the real ir_datasets reads, from the URLs of its downloads.json."""
    commands = irds.fetch_commands(NEEDS[source])
    assert commands and irds.how_to_fetch(NEEDS[source]).count(" && ") == len(commands) - 1
    for command in commands:
        words = shlex.split(command)
        if words[0] == "ir_datasets":
            proc = shell(command, no_network.env)
            assert proc.returncode == 0, (command, proc.stderr[-2000:])
            continue
        assert words[:3] == ["curl", "-fL", "--create-dirs"] and words[3] == "-o"
        handler = ir_datasets.load(trec_fair.DATASET_ID).docs_handler()
        read = {str(d.path(force=False)) for d in (handler._dlc, handler._metadata_dlc)}
        assert words[4] in read
        assert words[5].startswith("https://data.boisestate.edu/library/Ekstrand/")


def test_the_old_trec_fair_command_is_rejected_by_ir_datasets(no_network: NoNetwork) -> None:
    """What the offline error used to suggest: ir_datasets' argument parser refuses it."""
    proc = shell(
        "ir_datasets export trec-fair/2022/train queries, qrels and docs > /dev/null",
        no_network.env,
    )
    assert proc.returncode == 2 and "invalid choice: 'queries,'" in proc.stderr
