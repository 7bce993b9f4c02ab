#!/usr/bin/env bash
# Installs NVIDIA's ptxas (pip package nvidia-cuda-nvcc-cu12, CUDA 12.x, ~95 MB) so that the
# kiln-ptx tests can assemble every emitted kernel without a GPU, and prints its path.
# Usage: PTXAS=$(.ci/install-ptxas.sh) && KILN_PTXAS=$PTXAS KILN_REQUIRE_PTXAS=1 cargo test -p kiln-ptx
set -euo pipefail
python3 -m pip install --quiet --disable-pip-version-check nvidia-cuda-nvcc-cu12 >&2
# `nvidia.cuda_nvcc` is a namespace package: it has a __path__ but no __file__.
dir=$(python3 -c 'import nvidia.cuda_nvcc as m; print(list(m.__path__)[0])')
ptxas="$dir/bin/ptxas"
"$ptxas" --version >&2
echo "$ptxas"
