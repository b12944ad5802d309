"""Real runner results from an NVIDIA H200 (docs/gpu-results/h200-run2), stored through the services.

The view and browser tests use them as data: depth sweeps of an 8B- and a 27B-shaped model with
DFlash, and an n_max sweep of the 8B one. Model files are registered directly (the GGUF files
themselves stayed on the GPU machine); every result goes through `services.record_result`.
"""

from __future__ import annotations

import json
from pathlib import Path

from leaderboard import services
from leaderboard.models import Config, Hardware, Job, ModelFile, Run

RESULTS_DIR = Path(__file__).resolve().parents[2] / "docs" / "gpu-results" / "h200-run2"
NMAX_FILES = tuple(f"8b-nmax{n}.json" for n in (1, 2, 4, 8, 12, 15))
DEPTH_FILES = ("8b-dflash15-depth.json", "27b-dflash15-depth.json")


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


def _config(section: dict, *, target: ModelFile, draft: ModelFile | None, baseline=None) -> Config:
    canonical = section["config"]
    spec = ",".join(canonical.get("spec_types") or []) or "none"
    parts = [target.name, spec if draft else "baseline"]
    if draft:
        parts.append(f"draft {draft.name}")
    if canonical.get("n_max") is not None and draft:
        parts.append(f"n_max {canonical['n_max']}")
    parts.append(canonical["protocol"]["name"])
    if section.get("synthetic"):
        parts.append("synthetic")
    config, _ = Config.objects.get_or_create(
        key=section["config_key"],
        defaults={
            "canonical": canonical,
            "label": " · ".join(parts),
            "target": target,
            "draft": draft,
            "target_name": target.name,
            "spec_label": spec if draft else "none",
            "protocol": canonical["protocol"]["name"],
            "n_max": canonical.get("n_max") if draft else None,
            "ctx_size": canonical.get("ctx_size"),
            "synthetic": bool(section.get("synthetic")),
            "baseline": baseline,
        },
    )
    return config


def _record(result: dict, *, config: Config, hardware: Hardware, owner) -> Run:
    job = Job.objects.create(
        owner=owner, config=config, hardware=hardware, engine_release=result["engine"]["release"]
    )
    run = services.record_result(job_id=job.pk, result=result)
    assert run is not None, job.pk
    return run


def load_h200_results(*, owner, hardware: Hardware, files=NMAX_FILES + DEPTH_FILES) -> list[Run]:
    """Store the chosen result files (and the baselines measured with them) as jobs' results."""
    runs = []
    for name in files:
        result = json.loads((RESULTS_DIR / name).read_text())
        models = result["provenance"]["models"]
        target = _model(models["target"], ModelFile.Role.TARGET)
        draft = _model(models["draft"], ModelFile.Role.DRAFT) if models.get("draft") else None
        baseline_config = None
        if result.get("baseline"):
            paired = result["baseline"]
            baseline_config = _config(paired, target=target, draft=None)
            baseline_result = paired | {
                "schema_version": result["schema_version"],
                "engine": result["engine"],
                "baseline": None,
                "provenance": paired["provenance"] | {"system": result["provenance"]["system"]},
            }
            runs.append(
                _record(baseline_result, config=baseline_config, hardware=hardware, owner=owner)
            )
        config = _config(result, target=target, draft=draft, baseline=baseline_config)
        runs.append(_record(result, config=config, hardware=hardware, owner=owner))
    return runs
