"""Every registry op, against every table keyed by op name outside the registry.

A new op is declared once (``contract/``); the tables below are what else consumes ops by
name. An op absent from one is either in :data:`ABSENT` with the reason, or the test fails
naming the table; an entry that is no longer absent fails too, so the list stays the truth
(docs/architecture.md, "Adding an op", points here).
"""

from __future__ import annotations

import importlib

import pytest

from ember.contract import registry
from ember.contract.backend import Backend

_TRAINING = "a gradient op: ONNX export writes inference graphs"
_DATA = "moves data in or out of a backend, not a graph op"
_QUANT = ("ember.quantize's int8 layers export as their float equivalent only through "
          "QDQ, which the exporter does not write yet")
_OPSET18 = ("ONNX's Bitwise*/BitShift need opset 18 (the exporter writes 17); BitShift is "
            "unsigned-only")

#: (table, op) -> why the op has no entry there
ABSENT = {
    **{("onnx export", op): _DATA for op in ("from_data", "to_data", "to_data_async", "shape",
                                              "dtype")},
    **{("onnx export", op): _TRAINING for op in ("conv_weight_grad", "max_pool_grad")},
    **{("onnx export", op): _QUANT for op in ("qlinear", "qconv", "qlinear_u8", "qconv_u8",
                                               "qlinear_q", "qconv_q")},
    **{("onnx export", op): _OPSET18 for op in ("int_bitwise_and", "int_bitwise_or",
                                                 "int_bitwise_xor", "int_bitwise_not",
                                                 "int_shift_left", "int_shift_right")},
    ("onnx export", "arange"): "the traced shapes are static: arange folds into a constant",
    ("onnx export", "random_uniform"): "ONNX RandomUniform draws other numbers than Philox",
    ("onnx export", "float_atan2"): "ONNX has no Atan2; a quadrant-correct composite is not "
                                     "written",
    ("onnx export", "int_floor_divide"): "ONNX Div truncates integers; the floor correction "
                                          "and x // 0 == 0 are not written",
    ("onnx export", "int_remainder"): "ONNX Mod of integers by 0 is undefined; ember gives 0",
    ("onnx export", "int_pow"): "onnxruntime's integer Pow does not wrap around like ember's",
    ("onnx export", "float_cumprod"): "ONNX has no CumProd",
    ("onnx export", "int_cumprod"): "ONNX has no CumProd",
    ("onnx export", "float_sort"): "a full sort is TopK with k = n; not written",
    ("onnx export", "int_sort"): "a full sort is TopK with k = n; not written",
}


def _onnx_export() -> set[str]:
    pytest.importorskip("onnx")
    from ember.onnx.exporter_ops import EMITTERS

    return set(EMITTERS)


def _backend(module: str):
    def implemented() -> set[str]:
        mod = importlib.import_module(module)
        (cls,) = [c for c in vars(mod).values() if isinstance(c, type) and issubclass(c, Backend)
                  and c.__module__ == module]
        return {op.name for op in registry.ops()
                if not getattr(getattr(cls, op.name, None), "is_required", False)}

    return implemented


#: table -> the op names it handles (a backend handles an op with its own method or the
#: registry's default body; a required primitive it lacks is absent)
TABLES = {
    "onnx export": _onnx_export,
    **{f"{name} backend": _backend(f"ember.backends.{name}.backend")
       for name in ("numpy", "python", "wasm", "wgpu")},
}


@pytest.mark.parametrize("table", sorted(TABLES))
def test_every_op_is_in_every_table_or_listed_with_a_reason(table):
    handled = TABLES[table]()
    ops = {op.name for op in registry.ops()}
    assert not sorted(handled - ops), f"{table}: entries for ops the registry doesn't declare"
    missing = sorted(op for op in ops - handled if (table, op) not in ABSENT)
    assert not missing, (f"{table} has no entry for {missing}: add one, or list it in ABSENT "
                         "with the reason")
    stale = sorted(op for (t, op) in ABSENT if t == table and op in handled)
    assert not stale, f"{table} now handles {stale}: remove them from ABSENT"


def test_every_listed_op_exists():
    ops = {op.name for op in registry.ops()}
    assert not [op for (_, op) in ABSENT if op not in ops]
