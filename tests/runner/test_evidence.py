"""Derive, don't trust (runner.evidence): a result whose summary or points disagree with its own
measured requests is refused, naming the figure; one with no measured request is refused; the
stored H200 results, whose figures the runner computed, all agree with their requests."""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path

import pytest

from runner.config import BenchmarkConfig
from runner.errors import ResultError
from runner.evidence import (
    SUMMARY_FIGURES,
    derived_speedup,
    in_current_convention,
    measured_requests,
)
from runner.results import load_result
from runner.roofline import derived_roofline
from runner.stats import acceptance_and_tau, pooled_figures, summarize
from tests.support.results import fake_result

RESULTS_DIR = Path(__file__).parents[2] / "docs" / "gpu-results"
# A depth sweep with four points and its paired baseline, and a quick run of two requests.
DEPTH = RESULTS_DIR / "h200-run2" / "8b-dflash15-depth.json"
QUICK = RESULTS_DIR / "h200-run2" / "8b-nmax8.json"
# The first H200 run, whose engine answered every request with nothing (GPU_RESULTS.md).
EMPTY_RESPONSES = RESULTS_DIR / "h200-run1" / "8b-dflash12-depth.json"


def stored(path: Path) -> dict:
    return json.loads(path.read_text())


def refusal(data: dict) -> str:
    with pytest.raises(ResultError) as caught:
        load_result(data)
    return str(caught.value)


def mean_decode(records: list[dict]) -> float:
    return summarize([r["decode_tokens_per_second"] for r in records])["mean"]


def test_a_summary_mean_far_above_its_requests_is_refused_with_both_numbers():
    data = stored(QUICK)
    measured_mean = mean_decode(data["requests"])
    data["summary"]["decode_tokens_per_second"]["mean"] = 5000.0

    message = refusal(data)

    assert message == (
        "invalid result: summary.decode_tokens_per_second.mean is 5000, but the section's "
        f"measured requests give {measured_mean:.10g}"
    )


def _set(data: dict, path: str, change) -> None:
    *parents, last = path.split(".")
    node = data
    for part in parents:
        node = node[int(part)] if part.isdigit() else node[part]
    key = int(last) if last.isdigit() else last
    node[key] = change(node[key])


@pytest.mark.parametrize(
    ("path", "change"),
    [
        ("summary.decode_tokens_per_second.n", lambda n: n + 1),
        ("summary.decode_tokens_per_second.median", lambda v: v * 1.01),
        ("summary.decode_tokens_per_second.ci95_high", lambda v: v + 1.0),
        ("summary.end_to_end_tokens_per_second.mean", lambda v: v * 2),
        ("summary.end_to_end_tokens_per_second.stdev", lambda v: v / 2),
        ("summary.ttft_ms.max", lambda v: v + 100.0),
        ("summary.draft_tokens", lambda v: v + 1),
        ("summary.draft_accepted", lambda v: v - 1),
        ("summary.verify_steps", lambda v: v * 2),
        ("summary.acceptance_rate", lambda v: min(1.0, v + 0.2)),
        ("summary.tau", lambda v: v + 0.5),
        ("summary.acceptance_by_position.1", lambda v: v / 2),
        ("summary.acceptance_by_position", lambda v: v[:-1]),
        ("summary.acceptance_by_position", lambda v: None),
        ("summary.degenerate", lambda v: not v),
        ("points.1.tau", lambda v: v * 1.01),
        ("points.0.tau", lambda v: None),
        ("baseline.summary.degenerate", lambda v: not v),
        ("points.2.decode_tokens_per_second.mean", lambda v: v * 3),
        ("points.3.acceptance_rate", lambda v: v / 2),
        ("baseline.summary.decode_tokens_per_second.mean", lambda v: v / 3),
        ("baseline.points.0.decode_tokens_per_second.max", lambda v: v + 50.0),
    ],
)
def test_a_figure_that_disagrees_with_its_requests_is_refused_by_name(path, change):
    data = stored(DEPTH)
    _set(data, path, change)

    message = refusal(data)

    field = path.removeprefix("baseline.")
    prefix = "baseline: " if path.startswith("baseline.") else ""
    assert message.startswith(f"invalid result: {prefix}{field} is "), message
    assert "but the section's measured requests give" in message


def test_float_noise_within_a_millionth_passes_and_a_real_difference_does_not():
    data = stored(DEPTH)
    noisy = copy.deepcopy(data)
    noisy["summary"]["decode_tokens_per_second"]["mean"] *= 1 + 1e-9
    noisy["points"][1]["decode_tokens_per_second"]["stdev"] *= 1 - 1e-8
    load_result(noisy)

    data["summary"]["decode_tokens_per_second"]["mean"] *= 1 + 1e-5
    assert "summary.decode_tokens_per_second.mean" in refusal(data)


def _planning(data: dict, requests: int) -> dict:
    """A stored depth result whose protocol plans `requests` measured requests a depth."""
    data["config"]["protocol"]["requests"] = requests
    data["config_key"] = BenchmarkConfig.from_canonical(data["config"]).key
    return data


def test_requests_the_runner_leaves_out_of_a_figure_are_left_out_alike():
    data = _planning(stored(QUICK), 3)
    # A request the engine answered with nothing: no tokens, so no decode figure.
    silent = data["requests"][0] | {
        "index": 2,
        "predicted_n": 0,
        "predicted_ms": 0.0,
        "decode_tokens_per_second": None,
        "server_predicted_per_second": None,
        "end_to_end_tokens_per_second": 0.0,
        "ttft_ms": None,
        "draft_n": 0,
        "draft_n_accepted": 0,
        "verify_steps": 0,
        "tau": None,
        "accepted_per_position": [],
    }
    fast = data["requests"][1]
    warmup = fast | {
        "index": 3,
        "phase": "warmup",
        "predicted_ms": fast["predicted_ms"] / 2,
        "decode_tokens_per_second": fast["decode_tokens_per_second"] * 2,
        "server_predicted_per_second": None,
    }
    data["requests"] += [silent, warmup]

    # The summary still describes the two measured requests with figures: it validates.
    assert load_result(data).summary.decode_tokens_per_second.n == 2

    data["requests"][-1]["phase"] = "measure"
    assert "summary.decode_tokens_per_second.n is 2" in refusal(_planning(data, 4))


def test_a_result_without_a_measured_request_is_refused():
    data = stored(QUICK)
    for record in data["requests"]:
        record["phase"] = "warmup"
    assert "a result needs at least one measured request" in refusal(data)

    data["requests"] = []
    assert "a result needs at least one measured request" in refusal(data)


def test_a_baseline_without_a_measured_request_is_refused_as_the_baseline():
    data = stored(DEPTH)
    for record in data["baseline"]["requests"]:
        record["phase"] = "warmup"
    assert "baseline: requests: a result needs at least one measured request" in refusal(data)


def test_a_result_whose_requests_all_came_back_empty_is_refused():
    data = stored(EMPTY_RESPONSES)
    # Its engine's /metrics counted accepted drafts that its timings never reported.
    assert refusal(data).startswith(
        "invalid result: requests.3: accepted_per_position sums to 12, but draft_n_accepted is 0"
    )
    for record in data["requests"]:
        record |= {"accepted_per_position": [], "verify_steps": 0, "tau": None}
    assert refusal(data) == (
        "invalid result: requests: no measured request has a decode speed "
        "(decode_tokens_per_second)"
    )


def test_a_measured_request_past_the_last_point_is_refused():
    data = stored(QUICK)
    data["requests"][1]["point"] = 1
    assert "a measured request is at point 1, past the points" in refusal(data)


def test_every_stored_result_but_the_empty_one_agrees_with_its_requests():
    refused = set()
    for path in sorted(RESULTS_DIR.rglob("*.json")):
        data = stored(path)
        if isinstance(data, dict) and "schema_version" in data:
            try:
                load_result(data)
            except ResultError:
                refused.add(path)
    assert refused == {EMPTY_RESPONSES}


@pytest.mark.parametrize("name", ["8b-dflash15-depth.json", "27b-dflash15-depth.json"])
def test_the_speedup_derived_from_the_baseline_section_is_the_runners(name):
    data = stored(RESULTS_DIR / "h200-run2" / name)
    runners_speedup = data["summary"]["speedup"]
    # The claim is never read: the figure comes from the two sections' requests alone.
    data["summary"]["speedup"] = 50.0
    data["points"][0]["speedup"] = 50.0

    assert derived_speedup(data) == pytest.approx(runners_speedup, rel=1e-12)


def test_a_result_without_a_baseline_section_has_no_derived_speedup():
    data = stored(QUICK) | {"summary": stored(QUICK)["summary"] | {"speedup": 3.0}}
    assert derived_speedup(data) is None


def test_tau_and_acceptance_by_position_come_from_the_per_position_counts():
    data = stored(QUICK)
    records = measured_requests(data["requests"])
    steps = sum(r["verify_steps"] for r in records)
    accepted = sum(sum(r["accepted_per_position"]) for r in records)
    assert data["summary"]["tau"] == pytest.approx(1 + accepted / steps, rel=1e-12)
    assert data["points"][0]["tau"] == data["summary"]["tau"]

    # A request's per-position counts must be its own accepted drafts, one request at a time.
    data["requests"][0]["accepted_per_position"][0] -= 1
    assert refusal(data).startswith(
        "invalid result: requests.0: accepted_per_position sums to 208, but draft_n_accepted is 209"
    )


def _one_request(data: dict, *, old_form: bool) -> dict:
    """A stored quick result cut down to its first request, with the figures that one request
    gives: the null-spread form, or (old_form) the zero-width one files before it carry."""
    data = _planning(data, 1)
    data["requests"] = data["requests"][:1]
    records = measured_requests(data["requests"])
    figures = pooled_figures(records)
    for name in SUMMARY_FIGURES:
        data["summary"][name] = figures[name]
    acceptance, tau = acceptance_and_tau(records)
    data["points"][0] |= {
        "decode_tokens_per_second": copy.deepcopy(figures["decode_tokens_per_second"]),
        "acceptance_rate": acceptance,
        "tau": tau,
    }
    if old_form:
        for statistic in [data["summary"][name] for name in SUMMARY_FIGURES[:3]] + [
            data["points"][0]["decode_tokens_per_second"]
        ]:
            statistic |= {
                "stdev": 0.0,
                "ci95_low": statistic["mean"],
                "ci95_high": statistic["mean"],
            }
    data["summary"]["roofline"] = derived_roofline(data, run=data)
    return data


@pytest.mark.parametrize("old_form", [False, True], ids=["null", "zero-width"])
def test_one_request_loads_with_no_interval_or_the_old_zero_width_one(old_form):
    # In the current decode convention, so that loading derives no figure again.
    data = _one_request(in_current_convention(stored(QUICK)), old_form=old_form)

    loaded = load_result(data)
    decode = loaded.summary.decode_tokens_per_second

    assert decode.n == 1 and decode.mean == loaded.requests[0].decode_tokens_per_second
    if old_form:
        assert (decode.stdev, decode.ci95_low, decode.ci95_high) == (0.0, decode.mean, decode.mean)
    else:
        assert (decode.stdev, decode.ci95_low, decode.ci95_high) == (None, None, None)


@pytest.mark.parametrize(
    ("old_form", "path", "change", "named"),
    [
        (True, "summary.decode_tokens_per_second.ci95_high", lambda v: v + 5.0, None),
        (True, "summary.decode_tokens_per_second.ci95_low", lambda v: v - 5.0, None),
        (True, "summary.ttft_ms.stdev", lambda v: 1.5, None),
        (True, "points.0.decode_tokens_per_second.ci95_high", lambda v: v * 1.1, None),
        (False, "summary.decode_tokens_per_second.ci95_low", lambda v: 100.0, None),
        (False, "summary.decode_tokens_per_second.stdev", lambda v: 3.0, None),
        # Half of each form is neither: a zero stdev with no interval, an interval and no stdev.
        (False, "summary.end_to_end_tokens_per_second.stdev", lambda v: 0.0, ".ci95_low"),
        (True, "summary.ttft_ms.stdev", lambda v: None, ".ci95_low"),
    ],
)
def test_one_request_claiming_a_spread_or_an_interval_off_its_mean_is_refused(
    old_form, path, change, named
):
    data = _one_request(stored(QUICK), old_form=old_form)
    _set(data, path, change)

    message = refusal(data)

    field = path if named is None else path.rsplit(".", 1)[0] + named
    assert message.startswith(f"invalid result: {field} is "), message
    assert "but the section's measured requests give" in message


def test_a_fake_result_derives_its_summary_from_its_requests(tiny_models):
    parsed = BenchmarkConfig.model_validate(
        {
            "target_model": "tiny-qwen3.gguf",
            "draft_model": "tiny-qwen3.gguf",
            "spec_types": ["draft-simple"],
            "n_max": 4,
            "protocol": {"name": "quick", "n_predict": 64, "runs": 3},
        }
    )
    make_result = functools.partial(fake_result, models_dir=tiny_models["tiny-qwen3.gguf"].parent)
    for tau, draft in [(2.2, (40, 30)), (3.0, (80, 60)), (1.0, (0, 0)), (None, (9, 4))]:
        data = make_result(parsed, [100.0, 104.0, 98.0], draft=draft, tau=tau)
        summary = data["summary"]
        assert summary["tau"] == (None if tau is None else pytest.approx(tau, rel=1e-9))
        assert (summary["draft_tokens"], summary["draft_accepted"]) == draft
        assert summary == load_result(data).model_dump(mode="json")["summary"]
    one = make_result(parsed, [100.0], draft=(40, 30), tau=2.5, complete=False)
    assert one["summary"]["decode_tokens_per_second"]["ci95_low"] is None
