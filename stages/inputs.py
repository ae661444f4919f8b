"""What several model stages read first: the texts by id and torch's thread count."""

from __future__ import annotations

from pipeline.params import Params


def texts(transfer: bool = True) -> tuple[dict[str, str], dict[str, str]]:
    """Query and document texts by id (and the held-out collection's: ``transfer``)."""
    from pipeline import io, paths

    return io.read_texts(paths.text_tables(transfer))


def torch_threads(params: Params) -> None:
    import torch

    torch.set_num_threads(params.train.threads)
