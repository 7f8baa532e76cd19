"""Containers: Sequential (ModuleList and ModuleDict live with Module, which makes them)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator

from ..module import Module, ModuleDict, ModuleList  # noqa: F401 (re-exported)


class Sequential(Module):
    """Modules called in order, each on the previous output.

    >>> import ember
    >>> from ember import nn
    >>> net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    >>> net(ember.zeros(2, 3)).shape
    (2, 1)
    """

    def __init__(self, *modules: Module):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], (dict, OrderedDict)):
            for name, m in modules[0].items():
                self.add_module(str(name), m)
        else:
            for i, m in enumerate(modules):
                self.add_module(str(i), m)

    def _items(self) -> list[tuple[str, Module]]:
        return list(self._own_modules())

    def forward(self, x):
        for _, m in self._own_modules():
            x = m(x)
        return x

    def __getitem__(self, idx):
        items = self._items()
        if isinstance(idx, slice):
            return Sequential(OrderedDict(items[idx]))
        if isinstance(idx, str):
            return getattr(self, idx)
        return items[idx][1]

    def __len__(self) -> int:
        return len(self._items())

    def __iter__(self) -> Iterator[Module]:
        return (m for _, m in self._items())

    def append(self, module: Module) -> Sequential:
        """Add ``module`` at the end; returns the Sequential.

        >>> import ember
        >>> from ember import nn
        >>> model = nn.Sequential(nn.Linear(2, 3)).append(nn.ReLU())
        >>> len(model), model(ember.ones(1, 2)).shape
        (2, (1, 3))
        """
        self.add_module(str(len(self)), module)
        return self
