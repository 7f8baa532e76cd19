"""The Backend contract.

A backend turns ops on opaque *primitives* (its own array type) into results. The contract is
grouped like Burn's:

- ``TensorOps``   data movement for every dtype: from_data/to_data, cast, reshape, permute,
                  expand, slice, cat, gather, scatter, where, random numbers;
- ``FloatOps``    ``float_*`` arithmetic, math, reductions, sort, matmul;
- ``IntOps``      ``int_*`` (integer arithmetic wraps around like numpy);
- ``BoolOps``     ``bool_*`` logic;
- ``ModuleOps``   conv, conv-transpose, pooling, interpolation, normalisation;
- ``ActivationOps`` relu, gelu, softmax, ...

Each group marks its **required primitives** with ``@required``: a new backend must implement
those. Every other method is a **composite** with a default body written with primitives only
(helpers in ``prim_helpers``; the contract sits below the Tensor API and never imports it); a
backend overrides a composite only for speed, and the override must pass the same conformance
cases.

Conventions every primitive can rely on (the Tensor front end guarantees them):

- binary elementwise ops get operands of the same shape and the same dtype;
- ``dims`` arguments are non-empty, sorted, non-negative, and reductions keep reduced dims
  (size 1); arg-reductions take one ``dim`` and return int64;
- index tensors are int64 with values already in range (non-negative).

How to add a backend
--------------------
1. Subclass :class:`Backend`, set ``name`` and ``caps`` (dtypes it holds, float16, max dims).
2. Implement every method decorated with ``@required`` (``Backend.required_ops()`` lists them).
3. Register it: ``ember.backends.register("mine", MyBackend)``.
4. Run ``pytest tests/conformance --backend=mine``; add known failures with a reason to
   ``tests/conformance/known_failures.py``.
"""

from .base import Backend, Caps
from .required import required
from .module_ops import ModuleOps
from .activation_ops import ActivationOps

__all__ = ["Backend", "Caps", "required", "ModuleOps", "ActivationOps"]
