"""Module ops: convolution, pooling, interpolation, normalisation (float tensors).

Every method here is a composite with a default body written with primitives, so any backend
that implements the required primitives gets them; backends override them for speed.
Spatial ops take ``x`` as (N, C, *spatial) with 1 or 2 spatial dims (more where noted).
"""

from __future__ import annotations


class ModuleOps:
    def conv(self, x, weight, bias, stride: tuple, padding: tuple, dilation: tuple, groups: int):
        """Cross-correlation (PyTorch's conv). ``weight`` is (C_out, C_in / groups, *kernel);
        ``bias`` (C_out,) or None; ``padding`` is one ``(before, after)`` pair per spatial dim
        (zeros)."""
        raise NotImplementedError  # filled in by the nn.functional work

    def conv_transpose(
        self, x, weight, bias, stride: tuple, padding: tuple, output_padding: tuple,
        dilation: tuple, groups: int,
    ):
        """Transposed convolution (PyTorch's conv_transposeNd); ``weight`` is
        (C_in, C_out / groups, *kernel); ``padding`` one int per spatial dim."""
        raise NotImplementedError

    def max_pool(self, x, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple,
                 ceil_mode: bool):
        """Max over windows; padding counts as -inf."""
        raise NotImplementedError

    def avg_pool(self, x, kernel: tuple, stride: tuple, padding: tuple, ceil_mode: bool,
                 count_include_pad: bool):
        raise NotImplementedError

    def adaptive_avg_pool(self, x, output_size: tuple):
        raise NotImplementedError

    def interpolate(self, x, size: tuple, mode: str, align_corners: bool | None):
        """Resize spatial dims to ``size``; mode 'nearest', 'linear' or 'bilinear'."""
        raise NotImplementedError

    def layer_norm(self, x, normalized_ndim: int, weight, bias, eps: float):
        raise NotImplementedError

    def batch_norm(self, x, mean, var, weight, bias, eps: float):
        """Inference-form batch norm over dim 1 with given statistics."""
        raise NotImplementedError
