# Source on the GPU machine, from the repository root, after benchmarks/gpu_stage.sh's folder
# was carried there: installs the Vulkan loader and the staged wheels, and points Python at them.
STAGE=$PWD/.gpu-stage
for f in "$STAGE"/debs/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
pip install -q --no-deps --target /tmp/site "$STAGE"/wheels/*.whl
export PYTHONPATH=/tmp/site:$PWD/core:$STAGE/src
