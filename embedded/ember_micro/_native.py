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

# weight-only rows are dequantized in Python: ember_kernels has no C loop for it yet
from ._pure import dequant  # noqa: F401, E402

name = "native"
