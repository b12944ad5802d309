#!/usr/bin/env bash
# On the lent H200, in one call: build the CUDA engine (while the 8B-shaped model is written),
# probe which server options and request bodies decode closest to llama-bench with unchanged
# tokens (bench/gpu/sampling_probe.py), then measure the runner itself against llama-bench
# (bench/runner_fidelity.py, two depths), and with SPEC_CHECK=1 speculative decoding with the
# runner's defaults (bench/gpu/backend_sampling_check.py). Figures land in $OUT as they come.
set -u
OUT=${OUT:-/tmp/fidelity-out}
mkdir -p "$OUT"
export MODELS=/tmp/gpu-models SPECBOARD_CACHE=/tmp/specboard-cache PYTHONUNBUFFERED=1
export SPECBOARD_LLAMA_BACKEND=cuda SPECBOARD_CUDA_ARCHITECTURES=90
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
source bench/gpu/prepare.sh "$OUT"
export PYTHONPATH=/tmp/site
mkdir -p "$MODELS"
python3 bench/gpu/make_models.py "$MODELS" --shape qwen3-8b > "$OUT/make_models.log" 2>&1 &
models=$!
python3 -m runner engine > "$OUT/engine.log" 2>&1 || { tail -30 "$OUT/engine.log"; exit 1; }
server=$(awk 'END {print $1}' "$OUT/engine.log")
echo "engine: $server ($SECONDS s)"
wait "$models"
cat "$OUT/make_models.log"
model="$MODELS/qwen3-8b-random-Q4_K_M.gguf"
if [[ "${PROBE:-1}" == 1 ]]; then
    python3 bench/gpu/sampling_probe.py --server "$server" --model "$model" --depth 512 \
        --tokens 256 --reps 2 --threads 8 2>&1 | tee "$OUT/probe.txt"
    echo "probe done ($SECONDS s)"
fi
python3 bench/runner_fidelity.py --server "$server" --model "$model" --depths ${DEPTHS:-512 4096} \
    --ngl 999 --fa on --tokens 256 --reps 3 --threads 8 --option-sets "${OPTION_SETS:-all}" \
    2>&1 | tee "$OUT/fidelity.txt"
echo "fidelity done ($SECONDS s)"
if [[ "${SPEC_CHECK:-0}" == 1 ]]; then
    python3 bench/gpu/backend_sampling_check.py --server "$server" --models "$MODELS" \
        --shape qwen3-8b --depth 512 2>&1 | tee "$OUT/backend_sampling_check.txt"
    echo "speculative check done ($SECONDS s)"
fi
