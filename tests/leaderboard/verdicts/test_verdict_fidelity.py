"""Lossless is derived (`verdicts.fidelity`, `runner.evidence.identity_problem` and
`margin_problem`, issue 42): "identical" and "lossless" come only from the two sides' outputs,
the badge and the stored lossless agree, and "near ties only" needs every divergence to be a
near tie by the margin rule, on a backend where its threshold was measured. Each crafted file
passes every arithmetic check and breaks one rule; then every page and API resource that would
show it is read."""

from __future__ import annotations

import copy
import hashlib
import json
from io import StringIO
from types import SimpleNamespace

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from leaderboard.models import LeaderboardEntry, Run
from leaderboard.verdicts import graded_fidelity, outputs_verdict
from runner.config import BenchmarkConfig
from runner.fidelity import MAX_CONTINUATIONS, NEAR_TIE_MARGIN
from runner.results import BenchmarkResult
from tests.support.baselines import CPU_FLAGS, diverged, on_engine, with_baseline_section
from tests.support.measured_configs import draft_simple
from tests.support.quality_results import quality_result

SPECULATIVE = BenchmarkConfig.model_validate(draft_simple(4))
BASELINE = SPECULATIVE.baseline()
PAGES = ("/", f"/configs/{SPECULATIVE.key}/", "/models/tiny-qwen3/")


@pytest.fixture
def models_dir(tiny_models):
    return next(iter(tiny_models.values())).parent


def run(lossless, fidelity="", synthetic=False):
    return SimpleNamespace(lossless=lossless, fidelity=fidelity, synthetic=synthetic)


def verdict(*runs) -> tuple[bool | None, str]:
    outputs = outputs_verdict(runs)
    return outputs.lossless, outputs.fidelity


# The rule on stored batches ---------------------------------------------------------------------


def test_identical_only_where_every_compared_batch_matched():
    assert verdict(run(True, "identical")) == (True, "identical")
    # A batch compared without a grade diverged: the row is neither lossless nor "identical".
    assert verdict(run(True, "identical"), run(False)) == (False, "unclassified")
    assert verdict(run(None, "near ties only")) == (False, "near ties only")
    assert verdict(run(None, "", synthetic=True)) == (None, "")


def test_near_ties_stand_only_on_a_backend_whose_margin_floor_was_measured():
    assert graded_fidelity("near ties only", backend="cpu") == "near ties only"
    assert graded_fidelity("near ties only", backend="cuda") == "unclassified"
    assert graded_fidelity("mismatch", backend="cuda") == "mismatch"


# Crafted files at the door ----------------------------------------------------------------------


def import_file(tmp_path, user, result: dict) -> str:
    path = tmp_path / "crafted.json"
    path.write_text(json.dumps(result))
    out = StringIO()
    call_command(
        "import_runner_results",
        str(path),
        "--hardware",
        "NVIDIA H200",
        "--user",
        user.username,
        stdout=out,
    )
    return out.getvalue()


def paired(make_result, outputs: list[str], baseline_outputs: list[str]) -> dict:
    return with_baseline_section(
        make_result(SPECULATIVE, [150.0, 152.0, 154.0], outputs=outputs, draft=(40, 30), tau=2.2),
        make_result(BASELINE, [50.0, 51.0, 52.0], outputs=baseline_outputs),
    )


def refused(tmp_path, user, result: dict, match: str) -> None:
    with pytest.raises(CommandError, match=match):
        import_file(tmp_path, user, result)
    assert not Run.objects.exists() and not LeaderboardEntry.objects.exists()


def test_outputs_that_differ_with_no_divergence_claimed_are_refused(
    tmp_path, user, ranked_models, hardware, make_result
):
    # Request 1's output is not the baseline's, yet the file records no divergence for it.
    result = paired(make_result, ["a", "b", "c"], ["a", "b", "c"])
    result["baseline"]["requests"][1]["output_sha256"] = hashlib.sha256(b"x").hexdigest()

    refused(tmp_path, user, result, r"requests\.1\.first_divergence is null, but its output_sha256")


def test_a_divergence_claimed_on_identical_outputs_is_refused(
    tmp_path, user, ranked_models, hardware, make_result
):
    result = paired(make_result, ["a", "b", "c"], ["a", "b", "c"])
    result["requests"][2] |= {"first_divergence": 5, "divergence": "mismatch"}

    refused(tmp_path, user, result, r"requests\.2\.first_divergence is 5, but its output_sha256")


def test_quality_answers_that_differ_under_the_same_output_hash_are_refused(
    tmp_path, user, ranked_models, hardware, models_dir
):
    # 24 tasks, 8 answered otherwise than the baseline: "fewer correct", with the hashes forged
    # equal and no divergence recorded, as the crafted file of the issue had it.
    speculative, baseline = [True] * 16 + [False] * 8, [True] * 24
    result = quality_result(speculative, baseline, models_dir=models_dir)
    for record, reference in zip(result["requests"], result["baseline"]["requests"], strict=True):
        record |= {"output_sha256": reference["output_sha256"], "first_divergence": None,
                   "divergence": None, "divergence_margin": None}  # fmt: skip

    refused(tmp_path, user, result, r"requests\.16\.output_sha256 is the baseline's request 16's")


def near_ties(result: dict, index: int, margins: list[float]) -> dict:
    """Request `index` diverged at positions 0, 1, ... with a near tie at each margin."""
    record = result["requests"][index]
    found = [{"position": i, "margin": m, "kind": "near tie"} for i, m in enumerate(margins)]
    record |= {
        "output_sha256": hashlib.sha256(b"flipped").hexdigest(),
        "first_divergence": 0,
        "divergence": "near tie",
        "divergence_margin": margins[0],
        "divergences": found,
    }
    for other in result["requests"]:
        other.setdefault("divergences", [])
        if other is not record and other["divergences"] is None:
            other["divergences"] = []
    return result


def test_a_near_tie_with_a_clear_winner_is_refused(
    tmp_path, user, ranked_models, hardware, make_result
):
    result = near_ties(paired(make_result, ["a", "b", "c"], ["a", "b", "c"]), 1, [0.2, 1.5])

    refused(tmp_path, user, result, r"near tie at position 1 has a margin of 1\.5 nats, not below")


def test_more_near_ties_than_the_judging_can_find_are_refused(
    tmp_path, user, ranked_models, hardware, make_result
):
    margins = [0.5] * (MAX_CONTINUATIONS + 2)
    result = near_ties(paired(make_result, ["a", "b", "c"], ["a", "b", "c"]), 0, margins)

    refused(tmp_path, user, result, r"requests\.0 has 18 near ties, more than the 17")


def test_a_grade_judged_at_a_looser_threshold_than_the_runners_is_refused(
    tmp_path, user, ranked_models, hardware, make_result
):
    result = paired(make_result, ["a", "b", "c"], ["a", "b", "c"])
    result["summary"]["fidelity"] = {
        "verdict": "identical", "requests": 3, "identical_requests": 3, "identical_share": 1.0,
        "mean_identical_prefix_tokens": 64.0, "mean_identical_prefix_share": 1.0,
        "near_ties": 0, "mismatches": 0, "unclassified": 0, "near_tie_margin": 5.0,
    }  # fmt: skip

    refused(tmp_path, user, result, r"near_tie_margin is 5 nats, above the runner's")


# What the pages and the API show -----------------------------------------------------------------


def shown(client: Client) -> dict[str, str]:
    """Every page and API resource that would show the config's badge or its lossless."""
    pages = {path: client.get(path).content.decode() for path in PAGES}
    pages["/best/"] = client.get(
        "/best/", {"target": "tiny-qwen3", "memory_gb": "141"}
    ).content.decode()
    pages["api leaderboard"] = json.dumps(
        client.get("/api/v1/leaderboard", {"source": "all"}).json()
    )
    pages["api runs"] = json.dumps(client.get("/api/v1/runs").json())
    for run_row in Run.objects.filter(config__key=SPECULATIVE.key):
        pages[f"/runs/{run_row.pk}/"] = client.get(f"/runs/{run_row.pk}/").content.decode()
    return pages


def test_every_token_flipped_at_point_nine_nats_on_cuda_gets_no_green_badge(
    tmp_path, user, ranked_models, hardware, make_result, client: Client
):
    # One request judged to its end: 17 near ties at 0.9 nats (below the CPU-measured 1.0),
    # every other request identical. The file's own grade says "near ties only".
    result = near_ties(
        paired(make_result, ["a", "b", "c"], ["a", "b", "c"]), 0, [0.9] * (MAX_CONTINUATIONS + 1)
    )
    result["summary"]["fidelity"] = {
        "verdict": "near ties only", "requests": 3, "identical_requests": 2,
        "identical_share": 2 / 3, "mean_identical_prefix_tokens": 128 / 3,
        "mean_identical_prefix_share": 2 / 3, "near_ties": 1, "mismatches": 0,
        "unclassified": 0, "near_tie_margin": NEAR_TIE_MARGIN,
    }  # fmt: skip
    import_file(tmp_path, user, result)

    entry = LeaderboardEntry.objects.get(config__key=SPECULATIVE.key)
    spec_run = entry.best_run
    assert (spec_run.fidelity, spec_run.lossless) == ("unclassified", False)
    assert (entry.fidelity, entry.lossless) == ("unclassified", False)
    for where, page in shown(client).items():
        assert ">lossless<" not in page and ">near ties only<" not in page, where
        assert '"lossless": true' not in page, where
    assert "diverged (unclassified)" in client.get("/").content.decode()


def test_the_same_flips_on_the_cpu_build_are_near_ties_only(
    tmp_path, user, ranked_models, make_result
):
    result = near_ties(
        paired(make_result, ["a", "b", "c"], ["a", "b", "c"]), 0, [0.9] * (MAX_CONTINUATIONS + 1)
    )
    result = on_engine(result, backend="cpu", flags=CPU_FLAGS)
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps(result))
    call_command("import_runner_results", str(path), "--hardware", "CPU test",
                 "--user", user.username, stdout=StringIO())  # fmt: skip

    entry = LeaderboardEntry.objects.get(config__key=SPECULATIVE.key)
    assert (entry.fidelity, entry.lossless) == ("near ties only", False)


def test_a_row_with_a_diverged_batch_beside_an_identical_one_is_not_lossless_anywhere(
    tmp_path, user, ranked_models, hardware, make_result, client: Client
):
    # Batch 1: graded identical against the baseline measured beside it.
    import_file(tmp_path, user, paired(make_result, ["a", "b", "c"], ["a", "b", "c"]))
    # Batch 2: the same config measured alone, its outputs compared by the site with the stored
    # baseline's: request 2 differs, so this batch is not lossless (no grade without a margin).
    alone = make_result(SPECULATIVE, [150.0, 151.0, 152.0], outputs=["a", "b", "z"],
                        draft=(40, 30), tau=2.2)  # fmt: skip
    path = tmp_path / "alone.json"
    path.write_text(json.dumps(alone))
    call_command("import_runner_results", str(path), "--hardware", "NVIDIA H200",
                 "--user", user.username, stdout=StringIO())  # fmt: skip

    entry = LeaderboardEntry.objects.get(config__key=SPECULATIVE.key)
    assert (entry.fidelity, entry.lossless) == ("unclassified", False)
    for run_row in Run.objects.filter(config__key=SPECULATIVE.key):
        # Each batch: its badge and its stored lossless agree.
        assert (run_row.fidelity == "identical") == (run_row.lossless is True)
    pages = shown(client)
    # The row's badge (the config page lists each batch with its own, which agree above).
    for where in ("/", "/models/tiny-qwen3/", "/best/", "api leaderboard"):
        assert ">lossless<" not in pages[where], where
    assert SPECULATIVE.key not in pages["/best/"]
    row = [r for r in json.loads(pages["api leaderboard"])["results"]
           if SPECULATIVE.key in json.dumps(r)]  # fmt: skip
    assert [(r["lossless"], r["fidelity"]) for r in row] == [(False, "unclassified")]


def test_a_claim_of_lossless_in_a_file_is_never_stored(
    tmp_path, user, ranked_models, hardware, make_result
):
    result = paired(make_result, ["a", "b", "c"], ["a", "b", "c"])
    result = copy.deepcopy(diverged(result, None, "mismatch", None))
    result["summary"]["lossless"] = True
    result = BenchmarkResult.model_validate(result).model_dump(mode="json")
    import_file(tmp_path, user, result)

    entry = LeaderboardEntry.objects.get(config__key=SPECULATIVE.key)
    assert entry.lossless is False and entry.best_run.lossless is False
