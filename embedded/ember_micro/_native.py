# The native tier: C kernels from embedded/native/ember_kernels.c, built as a .mpy for the
# board's architecture (x64 here, armv6m/armv7emsp for Cortex-M). ImportError when absent.
from ember_kernels import (  # noqa: F401
    act,
    add,
    conv,
    conv_q,
    copy,
    dense,
    dense_q,
    gap,
    load_u8,
    pool,
    quantize,
)

# weight-only layers' rows to floats; an ember_kernels.mpy built before dequant existed has
# none, and model.py then uses the plain loop (_dequant.py) instead of refusing the tier
try:
    from ember_kernels import dequant  # noqa: F401
except ImportError:
    pass

name = "native"
