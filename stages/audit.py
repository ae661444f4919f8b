"""Stage `audit`: the shipped EDBT 2022 runs (215 queries) recomputed vs published values.

Needs the MS MARCO passage texts and full dev qrels in data/ (`dataset.name:
msmarco-passage`); where the qrels judge none of the audited queries, or no audited passage
has a text, every row says why it was skipped (pipeline/audit.py decides from the data).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from pipeline import io, paths, schemas
from pipeline.audit import audit_edbt2022, audit_markdown
from stages.common import run_stage, setup

log = logging.getLogger("stages.audit")


def main(argv: Sequence[str] | None = None) -> None:
    setup(__doc__ or "", argv)
    qrels = io.read_table(paths.QRELS, schemas.QRELS)
    doc_scores = io.read_table(paths.DOC_SCORES, schemas.DOC_SCORES)
    table = audit_edbt2022(qrels, doc_scores)
    io.write_text(table.write_csv(float_precision=4), paths.AUDIT_CSV)
    io.write_text(audit_markdown(table), paths.AUDIT_MD)
    statuses = table["status"].unique().to_list()
    log.info("audit: %d rows; status %s", table.height, statuses)


if __name__ == "__main__":
    run_stage(main)
