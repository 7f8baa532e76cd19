"""Modules and parameters: Burn's architecture with PyTorch's habits.

A :class:`Module` finds its parameters, buffers and submodules from its attributes (lists,
tuples and dicts of modules become :class:`ModuleList`/:class:`ModuleDict`), so a layer is a
plain class with a ``forward``. A :class:`Parameter` is a Tensor whose value can be swapped in
place, which is how optimizers and ``load_state_dict`` update a model.

How an optimizer updates a parameter (the contract)
---------------------------------------------------
On an Autodiff backend a trainable parameter *is* a tracked leaf (``t.require_grad()``)::

    model.zero_grad()
    loss.backward()
    for p in model.parameters():          # frozen parameters are skipped by parameters()
        if p.grad is None:                 # on p's backend, untracked; or None
            continue
        p.assign(p.detach() - lr * p.grad) # re-wrapped as a fresh tracked leaf, in place

(with Burn's explicit gradients: ``grads = loss.backward()`` and ``grads.get(p)``, a tensor on
the inner backend.) ``assign`` accepts a tensor on the parameter's backend, on its inner
backend, or anywhere else (moved with ``.to``); it keeps the parameter's shape (checked) and
dtype (cast), and the parameter keeps its ``.grad``. On a plain backend (no autodiff)
``assign`` just swaps the value and ``.grad`` is always None.

>>> import ember
>>> from ember import nn
>>> class Net(nn.Module):
...     def __init__(self):
...         super().__init__()
...         self.fc = nn.Linear(4, 2)
...     def forward(self, x):
...         return self.fc(x).relu()
>>> net = Net()
>>> [name for name, _ in net.named_parameters()]
['fc.weight', 'fc.bias']
>>> net.num_params()
10
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ..errors import EmberError, ShapeError
from ..ops import state as _state
from ..ops.autograd import clear_grads
from ..tensor import Tensor
from .parameter import Parameter, _detached, _onto


def clone_module(module: Module) -> Module:
    """An independent deep copy of ``module`` (new parameters, same backends):
    ``copy.deepcopy``, which tensors and parameters support so."""
    import copy

    return copy.deepcopy(module)


# ---------------------------------------------------------------------------- Module
class _Hook:
    def __init__(self, table: dict, key: int):
        self.table, self.key = table, key

    def remove(self) -> None:
        self.table.pop(self.key, None)


class Module:
    """Base class of every layer and model; subclasses define ``forward``.

    Attributes that are Parameters, Modules (or lists/dicts of Modules) and registered buffers
    make up the module's state, in attribute order.

    >>> import ember
    >>> from ember import nn
    >>> class Net(nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.blocks = [nn.Linear(2, 3), nn.Linear(3, 1)]  # becomes a ModuleList
    ...         self.register_buffer("steps", ember.zeros(1))
    ...     def forward(self, x):
    ...         return self.blocks[1](self.blocks[0](x).relu())
    >>> net = Net()
    >>> net(ember.ones(4, 2)).shape, net.num_params(), len(list(net.parameters()))
    ((4, 1), 13, 4)
    >>> [n for n, _ in net.named_parameters()][:2], [n for n, _ in net.named_buffers()]
    (['blocks.0.weight', 'blocks.0.bias'], ['steps'])
    >>> [n for n, _ in net.named_modules()], [n for n, _ in net.named_children()]
    (['', 'blocks', 'blocks.0', 'blocks.1'], ['blocks'])
    >>> len(list(net.modules())), len(list(net.children())), len(list(net.buffers()))
    (4, 1, 1)
    >>> net.eval().training, net.train().training, net.blocks[0].training
    (False, True, True)
    >>> net.freeze().num_params(trainable_only=True), net.unfreeze().num_params(trainable_only=True)
    (0, 13)
    >>> net.requires_grad_(False).num_params(trainable_only=True); net.requires_grad_(True)
    0
    Net(...)
    >>> net.double().blocks[0].weight.dtype, net.float().blocks[0].weight.dtype
    (ember.float64, ember.float32)
    >>> list(net.state_dict())
    ['steps', 'blocks.0.weight', 'blocks.0.bias', 'blocks.1.weight', 'blocks.1.bias']
    >>> other = Net()
    >>> other.load_state_dict(net.state_dict())
    ([], [])
    >>> other.blocks[1].bias.tolist() == net.blocks[1].bias.tolist()
    True
    >>> names = []
    >>> net.apply(lambda m: names.append(type(m).__name__)) is net, names
    (True, ['Linear', 'Linear', 'ModuleList', 'Net'])
    >>> handle = net.register_forward_hook(lambda m, inputs, out: out * 0 + 1)
    >>> net(ember.ones(1, 2)).tolist(); handle.remove()
    [[1.0]]
    >>> net.register_parameter("scale", nn.Parameter(ember.ones(1)))
    >>> net.add_module("head", nn.ReLU())
    >>> net.num_params(), net.head
    (14, ReLU())
    """

    training: bool = True
    _next_hook = 0

    def __init__(self) -> None:
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_buffer_names", {})  # name -> persistent
        object.__setattr__(self, "_forward_hooks", OrderedDict())

    # ------------------------------------------------------------------ attribute discovery
    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, (list, tuple)) and value and all(isinstance(v, Module) for v in value):
            value = ModuleList(value)
        elif (
            isinstance(value, dict) and value and not isinstance(value, Module)
            and all(isinstance(v, Module) for v in value.values())
        ):
            value = ModuleDict(value)
        current = self.__dict__.get(name)
        if isinstance(current, Parameter) and value is not None and not isinstance(
            value, Parameter
        ):
            raise TypeError(
                f"cannot assign {type(value).__name__} to parameter '{name}' of "
                f"{type(self).__name__}: wrap it in nn.Parameter, or update the value with "
                f"self.{name}.assign(tensor)"
            )
        if name in self._buffers_map() and value is not None and not isinstance(value, Tensor):
            raise TypeError(f"buffer '{name}' of {type(self).__name__} must be a Tensor or None")
        if isinstance(current, Tensor) and isinstance(value, Tensor) and _state.assign(current, value):
            current._prim = value._prim  # traced: the buffer is updated in place
            return
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        self._buffers_map().pop(name, None)
        object.__delattr__(self, name)

    def _buffers_map(self) -> dict:
        names = self.__dict__.get("_buffer_names")
        if names is None:
            names = {}
            object.__setattr__(self, "_buffer_names", names)
        return names

    def _hooks(self) -> OrderedDict:
        hooks = self.__dict__.get("_forward_hooks")
        if hooks is None:
            hooks = OrderedDict()
            object.__setattr__(self, "_forward_hooks", hooks)
        return hooks

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """State that is not trained (running statistics); saved in ``state_dict`` when
        ``persistent``, moved by ``to``."""
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"register_buffer: '{name}' must be a Tensor or None")
        self._buffers_map()[name] = persistent
        object.__setattr__(self, name, tensor)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add ``param`` (a Parameter, or a tensor that becomes one) as attribute ``name``."""
        if param is not None and not isinstance(param, Parameter):
            param = Parameter(param)
        object.__setattr__(self, name, param)

    def add_module(self, name: str, module: Module | None) -> None:
        """Add ``module`` as the submodule attribute ``name`` (``register_module`` too)."""
        object.__setattr__(self, name, module)

    register_module = add_module

    def _own_parameters(self) -> Iterator[tuple[str, Parameter]]:
        for name, value in self.__dict__.items():
            if isinstance(value, Parameter):
                yield name, value

    def _own_buffers(self) -> Iterator[tuple[str, Tensor]]:
        for name in self._buffers_map():
            value = self.__dict__.get(name)
            if value is not None:
                yield name, value

    def _own_modules(self) -> Iterator[tuple[str, Module]]:
        for name, value in self.__dict__.items():
            if isinstance(value, Module):
                yield name, value

    # ------------------------------------------------------------------ traversal
    def named_modules(self, prefix: str = "", memo: set | None = None):
        """``(dotted name, module)`` for this module and all descendants (each once)."""
        memo = set() if memo is None else memo
        if id(self) in memo:
            return
        memo.add(id(self))
        yield prefix, self
        for name, child in self._own_modules():
            yield from child.named_modules(f"{prefix}.{name}" if prefix else name, memo)

    def modules(self) -> Iterator[Module]:
        """This module and all its descendants, each once."""
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """``(name, module)`` of the direct submodules."""
        yield from self._own_modules()

    def children(self) -> Iterator[Module]:
        """The direct submodules."""
        for _, m in self._own_modules():
            yield m

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, include_frozen: bool = False
    ) -> Iterator[tuple[str, Parameter]]:
        """Trainable parameters by dotted name (frozen ones too with ``include_frozen``)."""
        seen: set[int] = set()
        modules = self.named_modules(prefix) if recurse else [(prefix, self)]
        for mod_name, mod in modules:
            for name, p in mod._own_parameters():
                if id(p) in seen or not (p.requires_grad or include_frozen):
                    continue
                seen.add(id(p))
                yield (f"{mod_name}.{name}" if mod_name else name), p

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """Trainable parameters (what an optimizer updates)."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True):
        """Buffers by dotted name (running statistics, masks...: state that is not trained)."""
        modules = self.named_modules(prefix) if recurse else [(prefix, self)]
        for mod_name, mod in modules:
            for name, b in mod._own_buffers():
                yield (f"{mod_name}.{name}" if mod_name else name), b

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """Every buffer of this module and its descendants."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def num_params(self, trainable_only: bool = False) -> int:
        """Number of parameter elements (all, or only trainable ones)."""
        return sum(
            p.numel() for _, p in self.named_parameters(include_frozen=not trainable_only)
        )

    # ------------------------------------------------------------------ modes
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear the ``.grad`` of every parameter (None; zeros with ``set_to_none=False``), as
        PyTorch's ``Module.zero_grad``.

        >>> import ember
        >>> from ember import nn
        >>> lin = nn.Linear(2, 1).to("autodiff-numpy")
        >>> _ = lin(ember.ones(1, 2, backend="autodiff-numpy")).sum().backward()
        >>> lin.bias.grad.tolist()
        [1.0]
        >>> lin.zero_grad(); lin.bias.grad is None
        True
        """
        clear_grads(self.parameters(), set_to_none)

    def train(self, mode: bool = True) -> Module:
        """Set training mode (``mode=False``: evaluation) on this module and its descendants; returns it."""
        for m in self.modules():
            object.__setattr__(m, "training", bool(mode))
        return self

    def eval(self) -> Module:
        """Evaluation mode (dropout off, batch norm uses running statistics); returns the module."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Freeze (``False``) or unfreeze every parameter: frozen ones are untracked."""
        for _, p in self.named_parameters(include_frozen=True):
            p.set_requires_grad(requires_grad)
        return self

    def freeze(self) -> Module:
        """Freeze every parameter (``requires_grad_(False)``); returns the module."""
        return self.requires_grad_(False)

    def unfreeze(self) -> Module:
        """Unfreeze every parameter (``requires_grad_(True)``); returns the module."""
        return self.requires_grad_(True)

    def apply(self, fn: Callable[[Module], None]) -> Module:
        """Call ``fn`` on every submodule (children first) and then on this module."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------------ moves
    def to(self, backend=None, dtype=None) -> Module:
        """Move every parameter and buffer to ``backend`` and/or float ``dtype`` (in place).

        ``backend`` is a backend name or Backend, or a PyTorch device string (``"cpu"``,
        ``"cuda"``...: :mod:`ember.backends.devices` says which backend each means; a model on
        an Autodiff backend stays on one).

        >>> import ember
        >>> from ember import nn
        >>> nn.Linear(2, 2).to(dtype=ember.float64).weight.dtype
        ember.float64
        >>> nn.Linear(2, 2).to("autodiff-python").to("cpu").weight.backend.name
        'autodiff-python'
        """
        from ..backends.devices import resolve, split

        backend, dtype = split(backend, dtype, f"{type(self).__name__}.to")
        for mod in self.modules():
            for _, p in mod._own_parameters():
                value = Tensor(p._prim, p.backend)
                if dtype is not None and p.dtype.is_float:
                    value = _detached(value).astype(dtype)
                p._set(value, p.backend if backend is None else resolve(backend, p.backend))
            for name, b in list(mod._own_buffers()):
                value = b if backend is None else mod._buffer_onto(b, resolve(backend, b.backend))
                if dtype is not None and b.dtype.is_float:
                    value = value.astype(dtype)
                object.__setattr__(mod, name, value)
        return self

    def _buffer_onto(self, value: Tensor, backend) -> Tensor:
        """One of this module's buffers on ``backend``, for :meth:`to`; a module whose
        buffers follow their own placement rules overrides this."""
        return _onto(value, backend)

    def double(self) -> Module:
        """Convert every float parameter and buffer to float64, in place; returns the module."""
        from .. import dtype as dt

        return self.to(dtype=dt.float64)

    def float(self) -> Module:
        """Convert every float parameter and buffer to float32, in place; returns the module."""
        from .. import dtype as dt

        return self.to(dtype=dt.float32)

    # ------------------------------------------------------------------ state
    def state_dict(self) -> OrderedDict[str, Tensor]:
        """Parameters (frozen too) and persistent buffers as ``name -> Tensor`` (untracked)."""
        out: OrderedDict[str, Tensor] = OrderedDict()
        for mod_name, mod in self.named_modules():
            pre = f"{mod_name}." if mod_name else ""
            for name, p in mod._own_parameters():
                out[pre + name] = _detached(p)
            for name, b in mod._own_buffers():
                if mod._buffers_map().get(name, True):
                    out[pre + name] = _detached(b)
        return out

    def load_state_dict(self, state: dict[str, Tensor], strict: bool = True):
        """Copy values in (cast to each target's dtype, moved to its backend).

        Returns ``(missing_keys, unexpected_keys)``; with ``strict`` either being non-empty
        raises. Shapes must match.
        """
        targets: dict[str, tuple[Module, str, Any]] = {}
        for mod_name, mod in self.named_modules():
            pre = f"{mod_name}." if mod_name else ""
            for name, p in mod._own_parameters():
                targets[pre + name] = (mod, name, p)
            for name, b in mod._own_buffers():
                if mod._buffers_map().get(name, True):
                    targets[pre + name] = (mod, name, b)
        missing = [k for k in targets if k not in state]
        unexpected = [k for k in state if k not in targets]
        if strict and (missing or unexpected):
            raise EmberError(
                f"load_state_dict into {type(self).__name__}: missing keys {missing}, "
                f"unexpected keys {unexpected} (pass strict=False to ignore)"
            )
        for key, (mod, name, current) in targets.items():
            if key not in state:
                continue
            value = state[key]
            if not isinstance(value, Tensor):
                from ..ops.creation import tensor

                value = tensor(value, backend=current.backend)
            if tuple(value.shape) != tuple(current.shape):
                raise ShapeError(
                    f"load_state_dict: '{key}' has shape {tuple(value.shape)} in the state "
                    f"dict but {tuple(current.shape)} in the model"
                )
            if isinstance(current, Parameter):
                current.assign(value)
            else:
                value = _onto(value, current.backend)
                if value.dtype != current.dtype:
                    value = value.astype(current.dtype)
                object.__setattr__(mod, name, value)
        return missing, unexpected

    # ------------------------------------------------------------------ calling
    def forward(self, *args, **kwargs):
        """The computation; ``module(*args)`` calls it, then the forward hooks. Subclasses define it.

        >>> import ember
        >>> from ember import nn
        >>> class Double(nn.Module):
        ...     def forward(self, x):
        ...         return x * 2
        >>> Double()(ember.tensor([1.0, 2.0])).tolist()
        [2.0, 4.0]
        """
        raise NotImplementedError(f"{type(self).__name__} has no forward()")

    def __call__(self, *args, **kwargs):
        out = self.forward(*args, **kwargs)
        hooks = self.__dict__.get("_forward_hooks")
        if hooks:
            for hook in list(hooks.values()):
                result = hook(self, args, out)
                if result is not None:
                    out = result
        return out

    def register_forward_hook(self, hook: Callable) -> _Hook:
        """``hook(module, inputs, output)`` runs after each forward; returns a handle with
        ``remove()``. A non-None return value replaces the output."""
        Module._next_hook += 1
        key = Module._next_hook
        self._hooks()[key] = hook
        return _Hook(self._hooks(), key)

    # ------------------------------------------------------------------ display
    def extra_repr(self) -> str:
        """The text inside the parentheses of the module's ``repr`` (its configuration).

        >>> from ember import nn
        >>> nn.Linear(2, 3).extra_repr()
        'in_features=2, out_features=3, bias=True'
        """
        return ""

    def __repr__(self) -> str:
        children = list(self._own_modules())
        extra = self.extra_repr()
        if not children:
            return f"{type(self).__name__}({extra})"
        lines = [f"{type(self).__name__}("]
        if extra:
            lines.append("  " + extra)
        for name, child in children:
            text = repr(child).replace("\n", "\n  ")
            lines.append(f"  ({name}): {text}")
        lines.append(")")
        return "\n".join(lines)

    def summary(self, input_shape: tuple[int, ...] | None = None, input=None,
                dtype=None, backend=None) -> str:
        """A table of layers with output shapes and parameter counts.

        Runs one forward on zeros of ``input_shape`` (or on ``input``) with hooks on every
        leaf module; without an input only parameter counts are listed.

        >>> from ember import nn
        >>> print(nn.Sequential(nn.Linear(4, 3), nn.ReLU()).summary((2, 4)))  # doctest: +ELLIPSIS
        Layer (type)  Output shape  Params
        ...
        1 (ReLU)      (2, 3)        0
        ...
        """
        rows: list[tuple[str, str, int]] = []
        handles = []
        if input_shape is not None or input is not None:
            for name, mod in self.named_modules():
                if name and not any(True for _ in mod.children()):
                    def hook(m, inputs, out, name=name):
                        shape = tuple(out.shape) if isinstance(out, Tensor) else (
                            tuple(out[0].shape) if isinstance(out, tuple) and out
                            and isinstance(out[0], Tensor) else "?"
                        )
                        own = sum(p.numel() for _, p in m._own_parameters())
                        rows.append((f"{name} ({type(m).__name__})", str(shape), own))

                    handles.append(mod.register_forward_hook(hook))
            try:
                if input is None:
                    from ..ops.creation import zeros

                    if backend is None:
                        first = next(iter(self.named_parameters(include_frozen=True)), None)
                        backend = first[1].backend if first else None
                    input = zeros(tuple(input_shape), dtype=dtype, backend=backend)
                out = self(input)
            finally:
                for h in handles:
                    h.remove()
            total_shape = str(tuple(out.shape)) if isinstance(out, Tensor) else "?"
        else:
            for name, mod in self.named_modules():
                if name and not any(True for _ in mod.children()):
                    own = sum(p.numel() for _, p in mod._own_parameters())
                    rows.append((f"{name} ({type(mod).__name__})", "-", own))
            total_shape = "-"
        header = ("Layer (type)", "Output shape", "Params")
        w0 = max([len(header[0])] + [len(r[0]) for r in rows]) + 2
        w1 = max([len(header[1])] + [len(r[1]) for r in rows]) + 2
        total = self.num_params()
        trainable = self.num_params(trainable_only=True)
        lines = [f"{header[0]:<{w0}}{header[1]:<{w1}}{header[2]}", "=" * (w0 + w1 + 10)]
        lines += [f"{r[0]:<{w0}}{r[1]:<{w1}}{r[2]:,}" for r in rows]
        lines += [
            "=" * (w0 + w1 + 10),
            f"Output shape: {total_shape}",
            f"Total params: {total:,}",
            f"Trainable params: {trainable:,}",
            f"Non-trainable params: {total - trainable:,}",
        ]
        return "\n".join(lines)


# ---------------------------------------------------------------------------- the containers Module makes
class ModuleList(Module):
    """A list of modules whose parameters belong to the owner (``self.blocks = [...]`` makes
    one automatically).

    >>> from ember import nn
    >>> blocks = nn.ModuleList([nn.Linear(2, 2)]).append(nn.ReLU()).extend([nn.Linear(2, 1)])
    >>> len(blocks), type(blocks[1]).__name__, len(blocks[:2]), blocks.num_params()
    (3, 'ReLU', 2, 9)
    """

    def __init__(self, modules: Iterable[Module] | None = None):
        super().__init__()
        for m in modules or ():
            self.append(m)

    def append(self, module: Module) -> ModuleList:
        """Add ``module`` at the end; returns the list."""
        if not isinstance(module, Module):
            raise TypeError(f"ModuleList.append: expected a Module, got {type(module).__name__}")
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        """Add each of ``modules`` at the end; returns the list."""
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
    """A dict of modules whose parameters belong to the owner.

    >>> from ember import nn
    >>> heads = nn.ModuleDict({"a": nn.Linear(2, 1), "b": nn.Linear(2, 3)})
    >>> heads.keys(), "a" in heads, heads["b"].out_features, heads.num_params()
    (['a', 'b'], True, 3, 12)
    >>> [type(m).__name__ for m in heads.values()], [k for k, _ in heads.items()]
    (['Linear', 'Linear'], ['a', 'b'])
    """

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
        """The names, in insertion order."""
        return [k for k, _ in self._own_modules()]

    def values(self):
        """The modules, in insertion order."""
        return [m for _, m in self._own_modules()]

    def items(self):
        """``(name, module)`` pairs, in insertion order."""
        return list(self._own_modules())

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleDict has no forward(); index it instead")
