#!/usr/bin/env bash
# On the lent H200: start bench/gpu/h200_pipeline.py (or PIPELINE, e.g.
# bench/gpu/h200_concurrency.py) once (in its own session, so it outlives this call), then follow
# it for up to WAIT seconds; when it has finished, pack its results into $OUT. Run the same
# command again to keep following.
set -u
export RESULTS=${RESULTS:-/tmp/gpu-results} MODELS=/tmp/gpu-models SPECBOARD_CACHE=/tmp/specboard-cache
export SPECBOARD_CUDA_ARCHITECTURES=90 PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
WAIT=${WAIT:-560}
PIPELINE=${PIPELINE:-bench/gpu/h200_pipeline.py}
if [[ ! -f /tmp/pipeline.started.$(basename "$RESULTS") ]]; then
    source bench/gpu/prepare.sh "$RESULTS"
    PYTHONPATH=/tmp/site setsid nohup python3 "$PIPELINE" > "$RESULTS/pipeline.out" 2>&1 < /dev/null &
    touch /tmp/pipeline.started.$(basename "$RESULTS")
fi
deadline=$((SECONDS + WAIT))
seen=0
while (( SECONDS < deadline )); do
    if [[ -f "$RESULTS/progress.log" ]]; then
        total=$(wc -l < "$RESULTS/progress.log")
        if (( total > seen )); then tail -n +"$((seen + 1))" "$RESULTS/progress.log"; seen=$total; fi
        grep -q "PIPELINE FINISHED" "$RESULTS/progress.log" && break
    fi
    if ! pgrep -f "$(basename "$PIPELINE")" >/dev/null; then echo "pipeline not running"; break; fi
    sleep 5
done
tail -5 "$RESULTS/pipeline.out"
if [[ -n "${OUT:-}" ]]; then
    tar czf "$OUT/gpu-results.tgz" -C "$RESULTS" . 2>/dev/null
    ls -la "$OUT"
fi
