"""Containers: Sequential, ModuleList, ModuleDict."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator

from ..module import Module


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
        self.add_module(str(len(self)), module)
        return self


class ModuleList(Module):
    """A list of modules whose parameters belong to the owner (``self.blocks = [...]`` makes
    one automatically)."""

    def __init__(self, modules: Iterable[Module] | None = None):
        super().__init__()
        for m in modules or ():
            self.append(m)

    def append(self, module: Module) -> ModuleList:
        if not isinstance(module, Module):
            raise TypeError(f"ModuleList.append: expected a Module, got {type(module).__name__}")
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        for m in modules:
            self.append(m)
        return self

    def __getitem__(self, idx):
        items = [m for _, m in self._own_modules()]
        if isinstance(idx, slice):
            return ModuleList(items[idx])
        return items[idx]

    def __setitem__(self, idx: int, module: Module) -> None:
        name = str(range(len(self))[idx])
        self.add_module(name, module)

    def __len__(self) -> int:
        return sum(1 for _ in self._own_modules())

    def __iter__(self) -> Iterator[Module]:
        return (m for _, m in self._own_modules())

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleList has no forward(); iterate over it instead")


class ModuleDict(Module):
    """A dict of modules whose parameters belong to the owner."""

    def __init__(self, modules: dict[str, Module] | None = None):
        super().__init__()
        for k, m in (modules or {}).items():
            self[k] = m

    def __getitem__(self, key: str) -> Module:
        return self.__dict__[key]

    def __setitem__(self, key: str, module: Module) -> None:
        if not isinstance(module, Module):
            raise TypeError(f"ModuleDict: expected a Module for {key!r}")
        self.add_module(key, module)

    def __contains__(self, key: str) -> bool:
        return isinstance(self.__dict__.get(key), Module)

    def __len__(self) -> int:
        return sum(1 for _ in self._own_modules())

    def __iter__(self) -> Iterator[str]:
        return (k for k, _ in self._own_modules())

    def keys(self):
        return [k for k, _ in self._own_modules()]

    def values(self):
        return [m for _, m in self._own_modules()]

    def items(self):
        return list(self._own_modules())

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleDict has no forward(); index it instead")
