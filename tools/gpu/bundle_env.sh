# Source this from an unpacked device bundle to run its binaries by hand:
#   . device_bundle/env.sh && device_bundle/bin/train --device=cuda ...
# Sets LD_LIBRARY_PATH (the bundle's lib/ first, then the directories holding
# cuBLAS, cuDNN and NVRTC, found as device_check.py finds them) and the
# runfiles variables through which the binaries find their plugins and data.
eval "$(python3 "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/scripts/device_check.py" --print-env)"
