"""Paper-scale rehearsal (issue #16): a synthetic MS MARCO-shaped source at full size, served
through ir_datasets-shaped objects, and a harness that runs the paper profile's stages on it.

- ``generate``: write the source once (Parquet + a random-access docstore), vectorised.
- ``source``: the fake ``ir_datasets.load`` over that folder (real namedtuples, streamed).
- ``stage``: run one pipeline stage with the fake source patched in (one subprocess each).
- ``run``: the one command: every size, every stage, wall time / peak RSS / output size.
- ``model_bench``: bounded train/rerank throughput, FLOPs per token, matmul peak, projection.

Benchmark tooling, not part of the pipeline; nothing here is imported by ``pipeline/``.
"""
