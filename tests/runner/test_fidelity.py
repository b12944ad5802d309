"""The fidelity grade (runner.fidelity): identical share, identical prefix, near ties vs mismatches,
every divergence of a request judged (the baseline continued from the run's prefix)."""

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from runner.evidence import fidelity_problem
from runner.fidelity import (
    MAX_CONTINUATIONS,
    MAX_MARGIN,
    NEAR_TIE_MARGIN,
    Divergence,
    FidelityGrade,
    TopTwo,
    classify_divergence,
    fidelity_grade,
    judge_divergences,
    request_kind,
    top_two_from_probabilities,
)
from runner.pairing import (
    DIVERGED_NOTE,
    SYNTHETIC_NOTE,
    margin_positions,
    pair_with_baseline,
    same_outputs,
)
from runner.results import RequestRecord

BASELINE = [5, 6, 7, 8]


def point(mean: float) -> dict:
    return {"decode_tokens_per_second": {"mean": mean}, "speedup": None}


def classify(tokens, top_two, baseline=BASELINE):
    position = next(i for i, (a, b) in enumerate(zip(tokens, baseline, strict=False)) if a != b)
    return classify_divergence(position, tokens=tokens, baseline_tokens=baseline, top_two=top_two)


def test_a_flip_to_the_runner_up_at_a_near_tie_is_a_near_tie():
    assert classify([5, 6, 9, 8], TopTwo(7, 9, 0.03)) == ("near tie", 0.03)


def test_overruling_a_clear_winner_is_a_real_mismatch():
    assert classify([5, 6, 9, 8], TopTwo(7, 9, 2.5)) == ("mismatch", 2.5)
    # The threshold itself is not a tie.
    assert classify([5, 6, 9, 8], TopTwo(7, 9, NEAR_TIE_MARGIN))[0] == "mismatch"


def test_a_flip_within_the_measured_noise_floor_is_a_near_tie():
    # docs/FIDELITY.md: on Gemma 3 270M Q4_K_M (CPU) batched evaluation alone moves a margin by
    # up to 0.81 nats, and the model drafting for itself flipped at 0.163 and 0.166.
    for margin in (0.163, 0.166, 0.62, 0.81):
        assert classify([5, 6, 9, 8], TopTwo(7, 9, margin)) == ("near tie", margin)


def test_a_token_outside_the_baselines_top_two_is_a_mismatch_even_at_a_tie():
    assert classify([5, 6, 42, 8], TopTwo(7, 9, 0.01)) == ("mismatch", 0.01)


def test_outputs_of_different_lengths_are_a_mismatch_with_no_margin():
    kind = classify_divergence(2, tokens=[5, 6], baseline_tokens=BASELINE, top_two=None)
    assert kind == ("mismatch", None)


def test_a_divergence_without_a_known_margin_is_unclassified():
    assert classify([5, 6, 9, 8], None) == ("unclassified", None)
    # A margin pass that chose another token than the measured baseline measured something else.
    assert classify([5, 6, 9, 8], TopTwo(9, 7, 0.01)) == ("unclassified", None)


def test_identical_output_has_no_divergence_to_classify():
    assert classify_divergence(None, tokens=BASELINE, baseline_tokens=BASELINE, top_two=None) == (
        None,
        None,
    )


def test_top_two_is_read_from_the_servers_completion_probabilities():
    # The shape llama-server b11434 returned for n_probs 2 on the tiny model (bytes dropped).
    probabilities = [
        {"id": 109, "token": "6d", "logprob": -3.0615,
         "top_logprobs": [{"id": 109, "token": "6d", "logprob": -3.0615},
                          {"id": 233, "token": "e9", "logprob": -3.6427}]},
        # A runner-up of probability 0, which the server writes as the lowest float.
        {"id": 7, "token": "x", "logprob": 0.0,
         "top_logprobs": [{"id": 7, "token": "x", "logprob": 0.0},
                          {"id": 8, "token": "y", "logprob": -3.4028234663852886e38}]},
        {"id": 3, "token": "z", "logprob": 0.0, "top_logprobs": [{"id": 3, "logprob": 0.0}]},
    ]  # fmt: skip
    first, certain, alone = top_two_from_probabilities(probabilities)
    assert (first.token, first.runner_up) == (109, 233)
    assert first.margin == pytest.approx(0.5812)
    assert certain.margin == MAX_MARGIN
    assert alone == TopTwo(3, None, None)


def records(*requests: tuple[int | None, str | None]) -> list[dict]:
    """Records whose only divergence (if any) is the one given, judged to the request's end."""
    return [
        {
            "first_divergence": first,
            "divergence": kind,
            "predicted_n": 100,
            "divergences": []
            if first is None
            else [{"position": first, "margin": 0.05, "kind": kind}],
        }
        for first, kind in requests
    ]


def old_records(*requests: tuple[int | None, str | None]) -> list[dict]:
    """Records as files before the divergence list stored them: the first divergence only."""
    return [
        {"first_divergence": first, "divergence": kind, "predicted_n": 100}
        for first, kind in requests
    ]


def test_the_grade_counts_identical_requests_and_the_mean_identical_prefix():
    grade = fidelity_grade(records((None, None), (None, None), (20, "near tie"), (60, "near tie")))
    assert grade.verdict == "near ties only"
    assert (grade.requests, grade.identical_requests, grade.near_ties) == (4, 2, 2)
    assert grade.identical_share == 0.5
    assert grade.mean_identical_prefix_tokens == pytest.approx((100 + 100 + 20 + 60) / 4)
    assert grade.mean_identical_prefix_share == pytest.approx(0.7)
    assert grade.near_tie_margin == NEAR_TIE_MARGIN


@pytest.mark.parametrize(
    "requests, verdict",
    [
        (((None, None), (None, None)), "identical"),
        (((None, None), (3, "near tie")), "near ties only"),
        (((3, "near tie"), (9, "mismatch")), "mismatch"),
        (((3, "near tie"), (9, "unclassified")), "unclassified"),
    ],
)
def test_one_real_mismatch_decides_the_verdict_and_unknowns_are_not_ties(requests, verdict):
    assert fidelity_grade(records(*requests)).verdict == verdict


@pytest.mark.parametrize(
    "requests, verdict",
    [
        (((None, None), (None, None)), "identical"),
        # Judged at the first divergence only, the rest of the request never was.
        (((None, None), (3, "near tie")), "unclassified"),
        # A flip at the last token leaves nothing after it to judge.
        (((None, None), (99, "near tie")), "near ties only"),
        (((3, "near tie"), (9, "mismatch")), "mismatch"),
        # An older record that diverged with no class counts as unclassified.
        (((None, None), (9, None)), "unclassified"),
    ],
)
def test_an_older_record_judged_at_its_first_divergence_only_is_graded_without_trust(
    requests, verdict
):
    assert fidelity_grade(old_records(*requests)).verdict == verdict


def test_a_run_with_no_requests_has_no_grade():
    assert fidelity_grade([]) is None


def test_a_grade_whose_counts_or_verdict_disagree_is_refused():
    grade = fidelity_grade(records((None, None), (3, "mismatch"))).model_dump()
    FidelityGrade.model_validate(grade)
    with pytest.raises(ValidationError, match="add up"):
        FidelityGrade.model_validate(grade | {"mismatches": 0})
    with pytest.raises(ValidationError, match="verdict"):
        FidelityGrade.model_validate(grade | {"verdict": "identical"})
    with pytest.raises(ValidationError, match="identical_share"):
        FidelityGrade.model_validate(grade | {"identical_share": 1.0})


def test_pairing_grades_each_divergence_by_the_baselines_margin_there():
    baseline = [[1, 2, 3, 4], [1, 2, 3, 4], [1, 2, 3, 4]]
    outputs = [[1, 2, 3, 4], [1, 9, 3, 4], [1, 2, 8, 4]]
    assert margin_positions(outputs, baseline) == [None, 1, 2]
    pairing = pair_with_baseline(
        points=[point(20.0)],
        baseline_points=[point(10.0)],
        outputs=outputs,
        baseline_outputs=baseline,
        synthetic=False,
        baseline_top_two=[None, TopTwo(2, 9, 0.02), TopTwo(3, 5, 4.0)],
    )
    assert pairing.first_divergences == [None, 1, 2]
    assert pairing.divergences == [None, "near tie", "mismatch"]
    assert pairing.divergence_margins == [None, 0.02, 4.0]
    assert pairing.fidelity.verdict == "mismatch"
    assert pairing.fidelity.identical_share == pytest.approx(1 / 3)
    assert pairing.fidelity.mean_identical_prefix_tokens == pytest.approx((4 + 1 + 2) / 3)
    # Lossless keeps its meaning: every request identical.
    assert (pairing.lossless, pairing.lossless_note) == (False, DIVERGED_NOTE)


def test_a_run_that_only_flipped_near_ties_is_graded_so_but_is_not_lossless():
    pairing = pair_with_baseline(
        points=[point(20.0)],
        baseline_points=[point(10.0)],
        outputs=[[1, 9]],
        baseline_outputs=[[1, 2]],
        synthetic=False,
        baseline_top_two=[TopTwo(2, 9, 0.05)],
    )
    assert pairing.fidelity.verdict == "near ties only"
    assert pairing.lossless is False


# Every divergence: after a near tie the baseline is continued from the run's own prefix.

LENGTH = 256
BASELINE_OUTPUT = list(range(1000, 1000 + LENGTH))
FLIP = 3
# Flips the baseline's 0.05-nat near tie at token 3, then follows another text: 253 of its 256
# tokens (98.8%) differ from the baseline's.
PARTED = BASELINE_OUTPUT[:FLIP] + [2000 + i for i in range(LENGTH - FLIP)]
AT_THE_FLIP = TopTwo(BASELINE_OUTPUT[FLIP], PARTED[FLIP], 0.05)


def continued_baseline(output: list[int], flips: dict[int, float]):
    """A baseline continued from a prefix of ``output``: it agrees with output except at each
    position in flips, where its greedy token is another one, ahead of output's by that margin."""

    def continuation(position: int) -> list[TopTwo]:
        steps = []
        for later in range(position + 1, len(output)):
            if later in flips:
                steps.append(TopTwo(output[later] + 1, output[later], flips[later]))
                # Past its own choice the baseline writes its own text; no step there is asked.
                steps += [TopTwo(9, 8, 5.0)] * (len(output) - later - 1)
                break
            steps.append(TopTwo(output[later], output[later] + 7, 4.0))
        return steps

    return continuation


def parted_pairing(**judging) -> object:
    return pair_with_baseline(
        points=[point(20.0)],
        baseline_points=[point(10.0)],
        outputs=[PARTED] * 4,
        baseline_outputs=[BASELINE_OUTPUT] * 4,
        synthetic=False,
        **judging,
    )


def test_a_near_tie_flip_followed_by_unjudged_tokens_is_not_near_ties_only():
    # Four requests that flip at a 0.05-nat near tie and then differ in 98.8% of their tokens:
    # with only the first divergence known, the rest of each request is unclassified.
    assert sum(a != b for a, b in zip(PARTED, BASELINE_OUTPUT, strict=True)) / LENGTH > 0.988
    pairing = parted_pairing(baseline_top_two=[AT_THE_FLIP] * 4)
    assert pairing.fidelity.verdict == "unclassified"
    assert pairing.fidelity.near_ties == 0 and pairing.fidelity.unclassified == 4
    assert pairing.divergences == ["near tie"] * 4
    assert pairing.divergence_lists[0] == [
        Divergence(position=FLIP, margin=0.05, kind="near tie"),
        Divergence(position=FLIP + 1, margin=None, kind="unclassified"),
    ]


@pytest.mark.parametrize(
    "flips, verdict, kinds",
    [
        # The baseline continued from the run's prefix writes the run's own tokens: one tie.
        ({}, "near ties only", ["near tie"]),
        # Each later divergence is itself a near tie the run flipped.
        ({40: 0.02, 200: 0.07}, "near ties only", ["near tie", "near tie", "near tie"]),
        # A later divergence overrules a clear winner: a mismatch, whatever came first.
        ({40: 0.02, 120: 2.5}, "mismatch", ["near tie", "near tie", "mismatch"]),
    ],
)
def test_every_divergence_is_judged_by_the_continued_baselines_own_margin(flips, verdict, kinds):
    judged = [
        judge_divergences(
            PARTED, BASELINE_OUTPUT, first=AT_THE_FLIP,
            continuation=continued_baseline(PARTED, flips),
        )
        for _ in range(4)
    ]  # fmt: skip
    assert [d.kind for d in judged[0]] == kinds
    assert [d.position for d in judged[0]] == [FLIP, *sorted(flips)]
    assert [d.margin for d in judged[0]] == [0.05, *(flips[p] for p in sorted(flips))]
    pairing = parted_pairing(baseline_top_two=[AT_THE_FLIP] * 4, baseline_divergences=judged)
    assert pairing.fidelity.verdict == verdict
    # The grade counts requests by their worst divergence; the first stays the first.
    assert pairing.divergences == ["near tie"] * 4
    assert pairing.first_divergences == [FLIP] * 4
    assert pairing.fidelity.mean_identical_prefix_tokens == FLIP


def test_judging_stops_at_a_mismatch_and_at_the_requests_end():
    mismatch = judge_divergences(
        PARTED, BASELINE_OUTPUT, first=TopTwo(BASELINE_OUTPUT[FLIP], PARTED[FLIP], 1.5),
        continuation=lambda position: pytest.fail("no continuation after a mismatch"),
    )  # fmt: skip
    assert mismatch == [Divergence(position=FLIP, margin=1.5, kind="mismatch")]
    last = BASELINE_OUTPUT[:-1] + [7]
    at_the_end = judge_divergences(
        last, BASELINE_OUTPUT, first=TopTwo(BASELINE_OUTPUT[-1], 7, 0.01),
        continuation=lambda position: pytest.fail("nothing follows the last token"),
    )  # fmt: skip
    assert at_the_end == [Divergence(position=LENGTH - 1, margin=0.01, kind="near tie")]
    assert judge_divergences(BASELINE_OUTPUT, BASELINE_OUTPUT, first=None) == []


def test_a_continuation_that_gives_nothing_leaves_the_rest_unclassified():
    judged = judge_divergences(
        PARTED, BASELINE_OUTPUT, first=AT_THE_FLIP, continuation=lambda position: None
    )
    assert [(d.position, d.kind) for d in judged] == [
        (FLIP, "near tie"),
        (FLIP + 1, "unclassified"),
    ]
    assert request_kind({"first_divergence": FLIP, "divergences": judged}) == "unclassified"


def test_past_the_bound_of_continuations_a_request_is_unclassified():
    calls = []

    def always_another_tie(position: int) -> list[TopTwo]:
        calls.append(position)
        nxt = position + 1
        return [TopTwo(PARTED[nxt] + 1, PARTED[nxt], 0.01)] + [TopTwo(9, 8, 5.0)] * (
            LENGTH - nxt - 1
        )

    judged = judge_divergences(
        PARTED, BASELINE_OUTPUT, first=AT_THE_FLIP, continuation=always_another_tie
    )
    assert len(calls) == MAX_CONTINUATIONS
    assert [d.kind for d in judged] == ["near tie"] * (MAX_CONTINUATIONS + 1) + ["unclassified"]
    assert judged[-1].position == FLIP + MAX_CONTINUATIONS + 1
    assert fidelity_grade([{"first_divergence": FLIP, "divergences": judged,
                            "predicted_n": LENGTH}]).verdict == "unclassified"  # fmt: skip


def stored_record() -> dict:
    """One measured request record of a stored H200 result, as plain JSON data."""
    stored = Path(__file__).parents[2] / "docs" / "gpu-results" / "h200-run2"
    return json.loads((stored / "27b-dflash15-depth.json").read_text())["requests"][0]


def judged_record(*divergences: tuple[int, float | None, str]) -> dict:
    listed = [{"position": p, "margin": m, "kind": k} for p, m, k in divergences]
    first = listed[0] if listed else {"position": None, "margin": None, "kind": None}
    return stored_record() | {
        "first_divergence": first["position"],
        "divergence": first["kind"],
        "divergence_margin": first["margin"],
        "divergences": listed,
    }


def test_a_record_carries_its_divergences_and_an_older_one_loads_without_them():
    record = RequestRecord.model_validate(
        judged_record((3, 0.05, "near tie"), (40, 0.02, "near tie"), (120, 2.5, "mismatch"))
    )
    assert [d.kind for d in record.divergences] == ["near tie", "near tie", "mismatch"]
    assert RequestRecord.model_validate(judged_record()).divergences == []
    older = stored_record()
    assert "divergences" not in older
    assert RequestRecord.model_validate(older).divergences is None


@pytest.mark.parametrize(
    "record, refusal",
    [
        # The list's first entry is the record's first divergence.
        (judged_record((3, 0.05, "near tie")) | {"first_divergence": 4}, "do not start with"),
        (judged_record() | {"first_divergence": 4, "divergence": "mismatch"}, "do not start with"),
        (judged_record((9, 0.05, "near tie"), (3, 0.01, "near tie")), "increasing positions"),
        # Judging goes on only after a near tie.
        (judged_record((3, 1.5, "mismatch"), (9, 0.01, "near tie")), "after a mismatch"),
    ],
)
def test_a_divergence_list_that_contradicts_itself_is_refused(record, refusal):
    with pytest.raises(ValidationError, match=refusal):
        RequestRecord.model_validate(record)


def test_a_grade_that_its_requests_divergences_contradict_is_refused():
    requests = [
        judged_record(),
        judged_record((3, 0.05, "near tie"), (120, 2.5, "mismatch")),
    ]
    graded = fidelity_grade(requests).model_dump()
    assert graded["verdict"] == "mismatch"
    assert fidelity_problem({"summary": {"fidelity": graded}, "requests": requests}) is None
    # "near ties only" from the first divergences alone: the second request's mismatch refutes it.
    claimed = fidelity_grade(
        [requests[0], requests[1] | {"divergences": requests[1]["divergences"][:1]}]
    ).model_dump()
    assert claimed["verdict"] == "near ties only"
    problem = fidelity_problem({"summary": {"fidelity": claimed}, "requests": requests})
    assert problem == (
        "summary.fidelity.verdict is near ties only, but the measured requests' divergences "
        "give mismatch"
    )
    # Records written before the list was recorded are read as they are.
    older = [{k: v for k, v in r.items() if k != "divergences"} for r in requests]
    assert fidelity_problem({"summary": {"fidelity": claimed}, "requests": older}) is None


def test_synthetic_acceptance_claims_no_grade():
    pairing = pair_with_baseline(
        points=[point(20.0)],
        baseline_points=[point(10.0)],
        outputs=[[1, 9]],
        baseline_outputs=[[1, 2]],
        synthetic=True,
        baseline_top_two=[TopTwo(2, 9, 0.05)],
    )
    assert pairing.fidelity is None and pairing.divergences == [None]
    assert (pairing.lossless, pairing.lossless_note) == (None, SYNTHETIC_NOTE)


def test_outputs_of_requests_with_different_prompts_are_not_compared():
    assert same_outputs(["a"], ["a"], prompt_hashes=["p"], baseline_prompt_hashes=["p"]) is True
    assert same_outputs(["a"], ["a"], prompt_hashes=["p"], baseline_prompt_hashes=["q"]) is None
    assert same_outputs(["a"], ["a"], prompt_hashes=[None], baseline_prompt_hashes=[None]) is None


# The real engine: llama-server b11434 on the tiny fixtures (CPU).

SELF_DRAFT = {
    "target_model": "tiny-qwen3.gguf", "draft_model": "tiny-qwen3.gguf",
    "spec_types": "draft-simple", "threads": 2,
}  # fmt: skip
# Verifying 17 tokens a batch sums in another order than one-token decoding: on this fixture one
# request at depth 512 flips a near tie (a gap of about 0.001 nats) within its 128 tokens.
NEAR_TIE_DEPTHS = {"name": "depth", "depths": [64, 512], "output_tokens": 128, "requests": 2}


def benchmark(models_dir, engine, events=None, **config):
    from runner.benchmark import run_benchmark
    from runner.config import parse_config

    result = run_benchmark(
        parse_config(SELF_DRAFT | config),
        models_dir=models_dir,
        engine=engine,
        with_baseline=True,
        progress=events.append if events is not None else None,
    )
    return result.model_dump(mode="json")


@pytest.mark.engine
def test_a_real_near_tie_flip_is_graded_from_the_baselines_own_margin(
    models_dir, engine, monkeypatch
):
    from runner.engines.session import ServerSession

    continued = []
    original = ServerSession.continued_top_two

    def counted(self, spec, prefix):
        steps = original(self, spec, prefix)
        continued.append((len(prefix), len(steps), spec.output_tokens))
        return steps

    monkeypatch.setattr(ServerSession, "continued_top_two", counted)
    events = []
    result = benchmark(models_dir, engine, events, n_max=16, protocol=NEAR_TIE_DEPTHS)
    summary, requests = result["summary"], result["requests"]
    diverged = [r for r in requests if r["first_divergence"] is not None]
    assert len(diverged) == 1 and diverged[0]["divergence"] == "near tie"
    assert diverged[0]["divergence_margin"] < NEAR_TIE_MARGIN
    # After the flip the baseline was continued from the run's own prefix to the request's end,
    # and every divergence it found there is judged and recorded (here none but the first).
    flip = diverged[0]["first_divergence"]
    assert flip + 1 < 128 and continued == [(flip + 1, 128 - flip - 1, 128)]
    assert diverged[0]["divergences"] == [
        {"position": flip, "margin": diverged[0]["divergence_margin"], "kind": "near tie"}
    ]
    assert all(r["divergences"] == [] for r in requests if r is not diverged[0])
    assert summary["fidelity"]["verdict"] == "near ties only"
    assert summary["fidelity"]["identical_share"] == pytest.approx(3 / 4)
    prefix = diverged[0]["first_divergence"]
    assert summary["fidelity"]["mean_identical_prefix_tokens"] == pytest.approx(
        (3 * 128 + prefix) / 4
    )
    # Lossless keeps its strict meaning; the grade says why it is false.
    assert summary["lossless"] is False
    # The margins came from a pass after the baseline's measured requests, none of them measured.
    phases = [event["phase"] for event in events]
    assert phases.index("baseline margins") > max(
        i for i, phase in enumerate(phases) if phase == "baseline"
    )
    assert len(result["baseline"]["requests"]) == 4


@pytest.mark.engine
def test_an_identical_run_is_graded_identical_and_a_synthetic_one_not_at_all(models_dir, engine):
    identical = benchmark(models_dir, engine, n_max=4, protocol={"name": "quick", "runs": 2,
                                                                "warmup": 0, "n_predict": 48})  # fmt: skip
    fidelity = identical["summary"]["fidelity"]
    assert fidelity["verdict"] == "identical" and fidelity["requests"] == 2
    assert fidelity["mean_identical_prefix_tokens"] == 48
    assert all(r["divergence"] is None for r in identical["requests"])
    synthetic = benchmark(
        models_dir, engine, n_max=4, spec_synth_len=3.0,
        protocol={"name": "quick", "runs": 2, "warmup": 0, "n_predict": 48},
    )  # fmt: skip
    assert synthetic["summary"]["fidelity"] is None
    assert synthetic["summary"]["lossless_note"] == SYNTHETIC_NOTE


@pytest.mark.engine
def test_the_margin_pass_retraces_the_measured_baseline_and_reads_real_margins(models_dir, engine):
    from runner.config import parse_config
    from runner.engines.session import open_session
    from runner.gguf.inspect import inspect_model
    from runner.protocols import RequestSpec

    config = parse_config({"target_model": "tiny-qwen3.gguf", "threads": 2})
    session = open_session(
        config, engine=engine, target=inspect_model(models_dir / "tiny-qwen3.gguf"),
        draft=None, request_timeout_s=60, start_timeout_s=60,
    )  # fmt: skip
    # Token ids on which the random weights have clear choices too: NEAR_TIE_MARGIN is wide
    # (1.0 nats) and every margin over the quick prompt's 48 tokens is below it (at most 0.996).
    spec = RequestSpec("measure", 0, 64, 48, list(range(10, 74)), 1234)
    session.start()
    try:
        tokens = session.measure(spec)["output_tokens"]
        top = session.top_two(spec)
    finally:
        session.stop()
    assert [step.token for step in top] == tokens
    assert all(step.runner_up not in (None, step.token) and step.margin >= 0 for step in top)
    close = min(range(len(top)), key=lambda i: top[i].margin)
    clear = max(range(len(top)), key=lambda i: top[i].margin)
    assert top[close].margin < NEAR_TIE_MARGIN <= top[clear].margin

    def flipped(position: int) -> str:
        output = tokens[:position] + [top[position].runner_up] + tokens[position + 1 :]
        pairing = pair_with_baseline(
            points=[point(2.0)], baseline_points=[point(1.0)], outputs=[output],
            baseline_outputs=[tokens], synthetic=False, baseline_top_two=[top[position]],
        )  # fmt: skip
        return pairing.divergences[0]

    assert flipped(close) == "near tie"
    assert flipped(clear) == "mismatch"


@pytest.mark.engine
@pytest.mark.parametrize("prompt", ["text", "token ids"])
def test_the_baseline_continued_from_its_own_prefix_retraces_its_output(models_dir, engine, prompt):
    from runner.config import parse_config
    from runner.engines.session import open_session
    from runner.gguf.inspect import inspect_model
    from runner.protocols import RequestSpec

    config = parse_config({"target_model": "tiny-qwen3.gguf", "threads": 2})
    session = open_session(
        config, engine=engine, target=inspect_model(models_dir / "tiny-qwen3.gguf"),
        draft=None, request_timeout_s=60, start_timeout_s=60,
    )  # fmt: skip
    text = config.protocol.prompt
    ids = list(range(100, 164))
    spec = RequestSpec("measure", 0, None, 48, text if prompt == "text" else ids, 1234)
    session.start()
    try:
        steps = session.top_two(spec)
        continued = session.continued_top_two(spec, [s.token for s in steps[:20]])
    finally:
        session.stop()
    # The prompt and the prefix reach the model as the measured request's exact tokens: the
    # continuation is the baseline's own output from there, up to the request's end, wherever
    # one-token decoding's margin is clear of the batched prefill's shift.
    assert len(continued) == 48 - 20
    clear = next((i for i, s in enumerate(steps[20:]) if s.margin < 0.01), len(continued))
    assert clear > 0
    assert [s.token for s in continued[:clear]] == [s.token for s in steps[20 : 20 + clear]]
    shifts = [abs(a.margin - b.margin) for a, b in zip(continued[:clear], steps[20:], strict=False)]
    assert max(shifts) < 0.01


def test_the_in_process_margin_pass_retraces_its_greedy_output(tiny_models):
    pytest.importorskip("llama_cpp")
    from runner.config import parse_config
    from runner.engines.llama_cpp_python import InProcessSession
    from runner.gguf.inspect import inspect_model
    from runner.protocols import RequestSpec

    config = parse_config({"engine": "llama-cpp-python", "target_model": "tiny-qwen3.gguf",
                           "threads": 2})  # fmt: skip
    session = InProcessSession(config, target=inspect_model(tiny_models["tiny-qwen3.gguf"]))
    spec = RequestSpec("measure", 0, None, 32, config.protocol.prompt, 1234)
    session.start()
    try:
        tokens = session.measure(spec)["output_tokens"]
        top = session.top_two(spec)
        continued = session.continued_top_two(spec, tokens[:10])
    finally:
        session.stop()
    assert [step.token for step in top] == tokens
    assert all(step.runner_up != step.token and step.margin >= 0 for step in top)
    # Continued from its own prefix it writes the rest of its own output.
    assert [step.token for step in continued] == tokens[10:]
