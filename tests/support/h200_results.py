"""Real runner results from an NVIDIA H200 (docs/gpu-results/h200-run2), stored through the services.

The view and browser tests use them as data: depth sweeps of an 8B- and a 27B-shaped model with
DFlash, an n_max sweep of the 8B one, and its concurrency sweep (h200-run4). Model files are registered directly (the GGUF files
themselves stayed on the GPU machine); every result goes through `services.import_runner_result`, the road result files take.
"""

from __future__ import annotations

import json
from pathlib import Path

from leaderboard import services
from leaderboard.models import Hardware, ModelFile, Run

RESULTS_DIR = Path(__file__).resolve().parents[2] / "docs" / "gpu-results" / "h200-run2"
NMAX_FILES = tuple(f"8b-nmax{n}.json" for n in (1, 2, 4, 8, 12, 15))
DEPTH_FILES = ("8b-dflash15-depth.json", "27b-dflash15-depth.json")
# The concurrency protocol on the same GPU (2026-12-01, bench/gpu/h200_concurrency.py).
CONCURRENCY_FILE = "../h200-run4/call1/8b-dflash12-concurrency.json"
CONCURRENCY_LEVELS = [1, 2, 4, 8, 16]


def _model(info: dict, role: str) -> ModelFile:
    model, _ = ModelFile.objects.get_or_create(
        path=Path(info["path"]).name,
        defaults={
            "name": info["name"],
            "sha256": info["sha256"],
            "size_bytes": info["size_bytes"],
            "architecture": info["architecture"],
            "metadata": info,
            "role": role,
        },
    )
    return model


def load_h200_results(*, owner, hardware: Hardware, files=NMAX_FILES + DEPTH_FILES) -> list[Run]:
    """Store the chosen result files (and the baselines measured with them) as runs."""
    runs = []
    for name in files:
        result = json.loads((RESULTS_DIR / name).read_text())
        models = result["provenance"]["models"]
        _model(models["target"], ModelFile.Role.TARGET)
        if models.get("draft"):
            _model(models["draft"], ModelFile.Role.DRAFT)
        runs += services.import_runner_result(
            owner=owner, hardware=hardware, result=result, source=f"docs/gpu-results/{name}"
        )
    return runs


def load_h200_concurrency(*, owner) -> tuple[Hardware, list[Run]]:
    """The H200's concurrency result on a hardware kind of its own: (the kind, [baseline run,
    speculative run])."""
    hardware = Hardware.objects.create(slug="h200", gpu_name="NVIDIA H200", queue_name="gpu.h200")
    return hardware, load_h200_results(owner=owner, hardware=hardware, files=(CONCURRENCY_FILE,))
