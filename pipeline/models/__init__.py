"""Model families (SPEC §5.1): ``cross_encoder``, ``bi_encoder``, ``late_interaction``.

One file per family; the registry (``MODELS``, ``build_ranker``, ``load_ranker``) is in
``pipeline.models.registry``. This package imports nothing itself, so loading params
(``pipeline.models.config``) never imports torch.
"""
