"""The Backend contract: the op registry, the Backend base class and its caps.

A backend turns ops on opaque *primitives* (its own array type) into results. Every op is
declared once in :mod:`ember.contract.registry`'s table by the family modules here:

- ``movement``      data, layout, indexing and creation, the same for every dtype (no prefix):
                    from_data/to_data, cast, reshape, permute, expand, slice, cat, gather, ...;
- ``float_math``    elementwise ``float_*`` arithmetic, comparisons and math;
- ``int_bool``      elementwise ``int_*`` (wrapping like numpy) and ``bool_*`` logic, where, cast;
- ``reductions``    sums, extremes, arg-reductions, scans, sort and matmul of every kind;
- ``convolution``, ``pooling``, ``normalization``, ``activations``: the module ops.

Each declaration says what kind of op it is, its arguments, how to infer its result's shape
and dtype, its default body (composites) and its gradient rule.

Conventions every primitive can rely on (the Tensor front end guarantees them):

- binary elementwise ops get operands of the same shape and the same dtype;
- ``dims`` arguments are non-empty, sorted, non-negative, and reductions keep reduced dims
  (size 1); arg-reductions take one ``dim`` and return int64;
- index tensors are int64 with values already in range (non-negative).

How to add a backend
--------------------
1. Subclass :class:`Backend`, set ``name`` and ``caps`` (the dtypes it holds, ...).
2. Implement every required primitive (``Backend.required_ops()`` lists them; ``MyBackend.
   missing_ops()`` lists those still missing) as methods of the op's name, or with
   ``MyBackend.implement(op, fn)``. Override composites only for speed.
3. Register it: ``ember.backends.register("mine", MyBackend)``.
4. Run ``pytest tests/conformance --backend=mine``; add known failures with a reason to
   ``tests/conformance/known_failures.py``.

How to add an op: see ``docs/architecture.md``.
"""

from . import registry
from .backend import Backend, Caps, Device
from .registry import Kind, Op, Spec

__all__ = ["Backend", "Caps", "Device", "Kind", "Op", "Spec", "registry"]
