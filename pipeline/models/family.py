"""The model-family record: what params, the stages and the model card know of a family.

A family (``pipeline/models/<arch>.py``) declares its own settings, the ``model.<arch>`` section
(its ``config``), and says how its ranker is built. Its :class:`~pipeline.models.base.Ranker`
subclass is made by ``ranker()``, which imports torch only when called, so collecting the
records (to validate ``model.<arch>`` where params load) never imports torch.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pipeline.config import NoConfig

if TYPE_CHECKING:
    from pipeline.models.base import Ranker


@dataclass(frozen=True)
class Family:
    """One model family (``model.arch``).

    ``name``: the ``model.arch`` value, also its module's file name. ``ranker()``: its
    :class:`Ranker` subclass (``cls``), built on first call (torch is imported then).
    ``auto_class`` (+ ``auto_kwargs``): the name of the transformers class its encoder loads
    with; ``make(encoder, tokenizer, cfg, seed)``: how to build it (default ``cls(encoder,
    tokenizer, cfg)``). ``config``: its own settings, the frozen dataclass the section
    ``model.<arch>`` loads into (``NoConfig``: none); the ranker reads them as
    ``self.settings``. ``per_text``: it encodes queries and documents one text at a time
    (the ``features`` stage then precomputes their frozen-bottom states; a cross-encoder
    encodes pairs). ``library``, ``pipeline_tag``, ``usage``: the model card's Hugging Face
    library, task tag and how to load a saved model. ``description``: one line with its paper.
    """

    name: str
    ranker: Callable[[], type[Ranker]]
    auto_class: str
    description: str
    config: type = NoConfig
    per_text: bool = True
    auto_kwargs: Mapping[str, Any] = field(default_factory=dict)
    make: Callable[..., Ranker] | None = None
    library: str = "transformers"
    pipeline_tag: str = "feature-extraction"
    usage: str = "`pipeline.models.registry.load_ranker(path)`."

    def __post_init__(self) -> None:
        module = sys.modules.get(getattr(self.ranker, "__module__", ""))
        if module is not None and "__getattr__" not in vars(module):
            setattr(module, "__getattr__", _finder(self.ranker, module.__name__))  # noqa: B010

    @property
    def cls(self) -> type[Ranker]:
        """The family's ranker class, named at the top level of its module when
        ``ranker()`` made it inside (:func:`importable`): pickle finds it."""
        cls = self.ranker()
        if "<locals>" in cls.__qualname__:
            importable(cls, self.ranker.__module__)
        return cls


def _finder(ranker: Callable[[], type[Ranker]], module: str) -> Callable[[str], type[Ranker]]:
    """A family module's ``__getattr__`` (PEP 562) for the class ``ranker()`` makes: how
    pickle finds it in a fresh process (a DDP rank loading the saved model), without the
    module importing torch when the registry collects it. Installed by :class:`Family` in
    the module that defines ``ranker`` unless the module has its own."""

    def find(name: str) -> type[Ranker]:
        cls = ranker()
        if name == cls.__name__:
            return importable(cls, module)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return find


def importable(cls: type[Ranker], module: str) -> type[Ranker]:
    """``cls``, a family's ranker class made inside its ``ranker()``, named at the top level
    of ``module`` (``pipeline.models.<arch>.<Class>``) so that pickle finds it: the DDP
    launcher saves the model object to a file its ranks load (pipeline/train/distributed.py).
    The family module's ``__getattr__`` calls ``ranker()`` for that name in a new process."""
    cls.__qualname__ = cls.__name__
    cls.__module__ = module
    setattr(sys.modules[module], cls.__name__, cls)
    return cls
