# Source this from an unpacked device bundle to run its binaries by hand:
#   . device_bundle/env.sh && device_bundle/bin/train --device=cuda ...
# Sets LD_LIBRARY_PATH (the bundle's lib/ first, then the directories holding
# cuBLAS, cuDNN and NVRTC, found as the device check finds them), the
# runfiles variables through which the binaries find their plugins and data,
# and MANTISSA_TORCH_PYTHON (the interpreter with torch, where one is found).
eval "$("$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/run.sh" --print-env)"
