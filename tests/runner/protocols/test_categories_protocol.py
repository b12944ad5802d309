"""The categories protocol: the project's prompt suite, its config's checks, its plan and budget,
per-category points from request records, the evidence check of their labels, and a real run
on llama-server with its paired baseline."""

from __future__ import annotations

from importlib import resources

import pytest
from pydantic import ValidationError

from runner import protocols, stats
from runner.benchmark import run_benchmark
from runner.config import BenchmarkConfig, field_errors, parse_config
from runner.evidence import evidence_problem
from runner.pairing import pair_with_baseline
from runner.prompts import load_suite, sample_prompts
from tests.support.legacy_fields import without_legacy_fields

TARGET = "tiny-qwen3.gguf"
REQUIRED = (
    "code", "math", "reasoning", "writing", "roleplay", "summarisation", "translation",
    "question-answering", "extraction", "stem", "humanities", "long-context", "multi-turn-chat",
)  # fmt: skip
FIRST_SUITE_CATEGORIES = (
    "code", "math", "summarisation", "translation", "question-answering", "extraction",
    "multi-turn-chat",
)  # fmt: skip


def categories(**protocol) -> dict:
    return {"target_model": TARGET, "protocol": {"name": "categories", **protocol}}


def errors_of(data: dict) -> dict[str, list[str]]:
    with pytest.raises(ValidationError) as caught:
        BenchmarkConfig.model_validate(data)
    return field_errors(caught.value)


# The suite


def test_both_suites_are_package_data_and_the_current_one_has_every_required_category():
    for name in ("categories.json", "suite-2.json"):
        assert resources.files("runner.prompts").joinpath(name).is_file()
    suite = load_suite()
    assert suite.names == REQUIRED
    assert suite.fewest_prompts >= 20 and len(suite.warmup) >= 1
    assert load_suite("1").names == FIRST_SUITE_CATEGORIES


def test_every_prompt_is_distinct_text_to_continue_and_no_warm_up_is_measured():
    suite = load_suite()
    prompts = [p for prompts in suite.categories.values() for p in prompts]
    assert len(set(prompts)) == len(prompts)
    assert not set(suite.warmup) & set(prompts)
    assert all(p.strip() and "\x00" not in p for p in prompts + list(suite.warmup))
    # Completion style: the summaries end on a cue to continue, the chats on the assistant's turn.
    assert all(p.rstrip().endswith(":") for p in suite.categories["multi-turn-chat"])
    assert all("Summary" in p or ":" in p[-40:] for p in suite.categories["summarisation"])


# Config


def test_a_config_of_the_first_suite_keeps_the_key_it_had_before_suites_had_versions():
    # The canonical config of the first suite's default categories, as stored before suite 2.
    stored = {"name": "categories", "categories": list(FIRST_SUITE_CATEGORIES),
              "output_tokens": 128, "prompts_per_category": 5, "warmup": 1, "seed": 7}  # fmt: skip
    first = parse_config(categories(suite="1", categories=list(FIRST_SUITE_CATEGORIES)))
    assert first.canonical()["protocol"] == stored
    assert first.key == "a3b12f56d83daf35"  # its key before suite 2
    # Read from a stored result, the config without a suite is the first suite's.
    again = BenchmarkConfig.from_canonical(
        protocols.stored_canonical(first.canonical() | {"ctx_size": None})
    )
    assert again.protocol.suite == "1" and again.key == first.key
    # A new config names its suite, so the two never share a key (or a ranking).
    current = parse_config(categories(categories=list(FIRST_SUITE_CATEGORIES)))
    assert current.canonical()["protocol"]["suite"] == "2" and current.key != first.key


def test_the_first_suite_s_categories_and_counts_are_checked_against_that_suite():
    errors = errors_of(categories(suite="1", categories=["stem"]))
    (message,) = errors["protocol.categories.categories"]
    assert message.startswith("unknown category 'stem'; known: code, math, summarisation")
    assert errors_of(categories(suite="1", prompts_per_category=6)) == {
        "protocol.categories.prompts_per_category": [
            "6 is more than the suite has: every category has 5"
        ]
    }
    assert "protocol.categories.suite" in errors_of(categories(suite="3"))


def test_the_plan_of_a_first_suite_config_draws_that_suite_s_prompts():
    config = parse_config(categories(suite="1", categories=["math"], prompts_per_category=3))
    plan = protocols.plan_requests(config, vocab_size=256)
    first = load_suite("1")
    assert plan[0].prompt == first.warmup[0]
    assert all(s.prompt in first.categories["math"] for s in plan[1:])
    assert len(plan) == 4


def test_defaults_run_every_category_of_the_current_suite():
    protocol = parse_config(categories()).protocol
    assert protocol.suite == "2"
    assert protocol.categories == list(REQUIRED)
    assert (protocol.output_tokens, protocol.prompts_per_category, protocol.warmup) == (128, 5, 1)
    assert protocol.seed == 7


def test_an_empty_category_list_is_a_field_error():
    errors = errors_of(categories(categories=[]))
    (message,) = errors["protocol.categories.categories"]
    assert message.startswith("choose at least one category; known: code, math")


def test_an_unknown_category_is_a_field_error_naming_it():
    errors = errors_of(categories(categories=["code", "poetry"]))
    (message,) = errors["protocol.categories.categories"]
    assert message.startswith("unknown category 'poetry'; known: code, math, reasoning")


def test_a_category_listed_twice_is_a_field_error():
    assert errors_of(categories(categories=["math", "math"])) == {
        "protocol.categories.categories": ["a category is listed twice"]
    }


def test_one_set_of_categories_is_one_config_whatever_the_order():
    first = parse_config(categories(categories=["math", "code"]))
    second = parse_config(categories(categories=["code", "math"]))
    assert first.protocol.categories == ["code", "math"] and first.key == second.key


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("prompts_per_category", 21, "21 is more than the suite has: every category has 20"),
        ("warmup", 6, "6 is more than the suite's 5 warm-up prompts"),
    ],
)
def test_more_prompts_than_the_suite_has_is_a_field_error(field, value, message):
    assert errors_of(categories(**{field: value})) == {f"protocol.categories.{field}": [message]}


@pytest.mark.parametrize("value", ["2", 2.0, True, 0])
def test_prompt_counts_are_strict_positive_integers(value):
    assert list(errors_of(categories(prompts_per_category=value))) == [
        "protocol.categories.prompts_per_category"
    ]


def test_the_context_fits_the_longest_prompt_and_the_output():
    config = parse_config(categories(categories=["extraction"], output_tokens=64))
    longest = max(len(p.encode()) for p in load_suite().categories["extraction"])
    assert config.effective_ctx_size == 64 + longest // 2 + 64
    small = parse_config(categories(categories=["math"], output_tokens=64))
    assert small.effective_ctx_size < config.effective_ctx_size


# Planning and budget


def test_the_plan_warms_up_then_measures_each_category_s_prompts_in_the_suite_s_order():
    config = parse_config(categories(categories=["translation", "code"], prompts_per_category=2))
    plan = protocols.plan_requests(config, vocab_size=256)
    assert [(s.phase, s.point, s.category) for s in plan] == [
        ("warmup", 0, None),
        ("measure", 0, "code"),
        ("measure", 0, "code"),
        ("measure", 1, "translation"),
        ("measure", 1, "translation"),
    ]
    suite = load_suite()
    assert plan[0].prompt == suite.warmup[0]
    assert all(s.prompt in suite.categories[s.category] for s in plan[1:])
    assert len({s.prompt_sha256 for s in plan}) == len(plan)
    assert all(s.input_tokens is None and s.output_tokens == 128 for s in plan)
    assert plan[1].labels() == {"round": None, "concurrency": None, "category": "code"}


def test_the_seed_picks_which_prompts_and_the_baseline_gets_the_same():
    def picked(seed: int) -> tuple[str, ...]:
        config = parse_config(categories(categories=["code"], prompts_per_category=2, seed=seed))
        return tuple(s.prompt for s in protocols.plan_requests(config, vocab_size=256))

    assert picked(7) == picked(7)
    assert len({picked(seed) for seed in range(8)}) > 1
    config = parse_config(categories() | {"spec_types": "ngram-mod"})
    same = protocols.plan_requests(config.baseline(), vocab_size=256)
    assert [s.prompt for s in protocols.plan_requests(config, vocab_size=256)] == [
        s.prompt for s in same
    ]


def test_n_gram_configs_never_see_a_measured_prompt_twice():
    config = parse_config(categories() | {"spec_types": "ngram-mod"})
    records = [
        {"prompt_sha256": spec.prompt_sha256}
        for spec in protocols.plan_requests(config, vocab_size=256)
        if spec.phase == "measure"
    ]
    assert len(records) == 13 * 5
    assert protocols.repeated_prompt(config, records) is False


def test_the_token_budget_counts_warm_ups_and_every_category_s_prompts():
    config = parse_config(
        categories(categories=["math", "code"], prompts_per_category=3, output_tokens=10)
    )
    budget = protocols.token_budget(config)
    plan = protocols.plan_requests(config, vocab_size=256)
    assert budget["requests"] == 1 + 2 * 3 == len(plan)
    assert budget["generated_tokens"] == 7 * 10
    assert budget["prompt_tokens"] == sum(len(s.prompt) // 4 for s in plan)
    # The baseline's second session (two ABBA rounds) warms up once more.
    assert protocols.token_budget(config, with_baseline=True)["requests"] == 14 + 1


# Points from hand-made records


def record(point: int, category: str, *, decode: float, drafted: int, accepted: int) -> dict:
    return {
        "phase": "measure", "point": point, "category": category, "concurrency": None,
        "round": None, "decode_tokens_per_second": decode,
        "end_to_end_tokens_per_second": decode / 2, "ttft_ms": 4.0, "predicted_n": 16,
        "wall_ms": 50.0, "draft_n": drafted, "draft_n_accepted": accepted,
        "verify_steps": max(1, drafted // 4), "accepted_per_position": [],
        "distinct_4gram_ratio": 1.0, "stopped_early": False,
    }  # fmt: skip


CONFIG = parse_config(categories(categories=["code", "translation"], prompts_per_category=2))


def hand_made(code: float, translation: float) -> list[dict]:
    return [
        record(0, "code", decode=code, drafted=8, accepted=7),
        record(0, "code", decode=code, drafted=8, accepted=5),
        record(1, "translation", decode=translation, drafted=8, accepted=2),
        record(1, "translation", decode=translation, drafted=8, accepted=2),
    ]


def test_each_category_is_a_point_with_its_own_speed_and_acceptance():
    points = stats.depth_points(CONFIG, hand_made(120.0, 80.0))
    assert [p["category"] for p in points] == ["code", "translation"]
    assert [p["decode_tokens_per_second"]["mean"] for p in points] == [120.0, 80.0]
    assert [p["acceptance_rate"] for p in points] == [12 / 16, 4 / 16]
    assert all(p["input_tokens"] is None and p["output_tokens"] == 128 for p in points)
    pooled = stats.pooled_figures(hand_made(120.0, 80.0))
    assert pooled["decode_tokens_per_second"]["mean"] == 100.0
    assert pooled["acceptance_rate"] == 16 / 32


def test_speedup_per_category_is_decode_over_the_baseline_s_decode():
    baseline = [dict(r, draft_n=0, draft_n_accepted=0) for r in hand_made(100.0, 100.0)]
    pairing = pair_with_baseline(
        points=stats.depth_points(CONFIG, hand_made(120.0, 80.0)),
        baseline_points=stats.depth_points(CONFIG.baseline(), baseline),
        outputs=[[1]] * 4,
        baseline_outputs=[[1]] * 4,
        synthetic=False,
    )
    assert pairing.point_speedups == [pytest.approx(1.2), pytest.approx(0.8)]
    assert pairing.speedup == pytest.approx((1.2 * 0.8) ** 0.5)
    # A crossover is a concurrency level's: categories have none.
    assert pairing.crossover_concurrency is None


def section(records: list[dict]) -> dict:
    return {
        "summary": stats.pooled_figures(records),
        "points": stats.depth_points(CONFIG, records),
        "requests": records,
    }


def test_a_categories_result_agrees_with_its_records_and_a_relabelled_one_does_not():
    result = section(hand_made(120.0, 80.0))
    assert evidence_problem(result) is None
    result["points"][1]["category"] = "math"
    assert evidence_problem(result) == (
        "points.1.category is math, but its measured requests say translation"
    )


def test_a_tampered_category_point_is_refused():
    result = section(hand_made(120.0, 80.0))
    result["points"][0]["acceptance_rate"] = 0.9
    problem = evidence_problem(result)
    assert problem is not None and problem.startswith("points.0.acceptance_rate is 0.9")


# On the real engine


@pytest.mark.engine
def test_the_categories_protocol_runs_on_llama_server_with_its_paired_baseline(models_dir, engine):
    config = parse_config(
        {"target_model": TARGET, "draft_model": TARGET, "spec_types": "draft-simple",
         "n_max": 4, "threads": 2}
        | categories(categories=["math", "code"], prompts_per_category=2, output_tokens=16)
    )  # fmt: skip
    result = run_benchmark(config, models_dir=models_dir, engine=engine, with_baseline=True)
    data = result.model_dump(mode="json")

    assert [p["category"] for p in data["points"]] == ["code", "math"]
    assert [r["category"] for r in data["requests"]] == ["code", "code", "math", "math"]
    for point, baseline_point in zip(data["points"], data["baseline"]["points"], strict=True):
        assert point["decode_tokens_per_second"]["n"] == 2
        assert point["acceptance_rate"] == 1.0 and point["tau"] > 1.0
        assert point["speedup"] == pytest.approx(
            point["decode_tokens_per_second"]["mean"]
            / baseline_point["decode_tokens_per_second"]["mean"]
        )
    assert all(r["predicted_n"] == 16 and r["prompt_n"] > 10 for r in data["requests"])
    assert len({r["prompt_sha256"] for r in data["requests"]}) == 4
    # The suite and the seed are in the result: the sample can be drawn again from it alone.
    assert (data["config"]["protocol"]["suite"], data["config"]["protocol"]["seed"]) == ("2", 7)
    again = parse_config(data["config"]).protocol
    assert [r["prompt_sha256"] for r in data["requests"]] == [
        protocols.RequestSpec("measure", 0, None, 1, text, 0).prompt_sha256
        for _, _, text in sample_prompts(load_suite("2"), again.categories, size=2, seed=7)
    ]
    # Greedy self-drafting on the same prompts as the baseline: identical outputs.
    assert data["summary"]["lossless"] is True
    assert data["summary"]["crossover_concurrency"] is None
    assert data["provenance"]["token_budget"]["requests"] == 2 * (1 + 4) + 1
    # The runner sets every field of its result, the new protocols' included, but those only
    # older files carry.
    assert result.model_dump(mode="json", exclude_unset=True) == without_legacy_fields(data)
