"""The quality protocol: its generated tasks (deterministic by seed, answers right by
recomputation), the extraction and scoring rule, the paired accuracy statistics against known
values, the config's checks and plan, the door's re-scoring, and real runs on llama-server."""

from __future__ import annotations

import ast
import json
import math
import operator
import re

import pytest
from pydantic import ValidationError
from scipy.stats import binomtest

from runner import protocols, stats
from runner.benchmark import run_benchmark
from runner.config import BenchmarkConfig, field_errors, parse_config
from runner.errors import ResultError
from runner.protocols import QualityProtocol, quality
from runner.results import load_result
from tests.support.protocol_results import OUTPUT_TOKENS
from tests.support.quality_results import TARGET, quality_config, quality_result

# The tasks


def test_the_same_seed_gives_the_same_tasks_and_another_seed_other_ones():
    first = quality.tasks(seed=11, count=30)
    assert first == quality.tasks(seed=11, count=30)
    other = quality.tasks(seed=12, count=30)
    assert [t.prompt for t in first] != [t.prompt for t in other]
    # A longer list begins with the shorter one: a task depends on its seed and position only.
    assert quality.tasks(seed=11, count=40)[:30] == first


def test_tasks_take_the_kinds_in_turn_with_ids_naming_kind_and_position():
    tasks = quality.tasks(seed=3, count=12)
    assert [t.kind for t in tasks] == list(quality.KINDS) * 2
    assert [t.task_id for t in tasks] == [f"{t.kind}-{i}" for i, t in enumerate(tasks)]
    only = quality.tasks(seed=3, count=4, kinds=["json", "code"])
    assert [t.kind for t in only] == ["json", "code", "json", "code"]


def _recomputed(task: quality.QualityTask) -> str:
    """The task's answer worked out again from its question text alone, independently of the
    generator's own computation."""
    question = task.question
    if task.kind == "arithmetic":
        a, symbol, b = re.fullmatch(r"What is (\d+) ([-+*]) (\d+)\?", question).groups()
        ops = {"+": operator.add, "-": operator.sub, "*": operator.mul}
        return str(ops[symbol](int(a), int(b)))
    if task.kind == "word":
        a, verb, b = re.search(r"has (\d+) \w+ and (gets|gives away) (\d+)", question).groups()
        return str(int(a) + int(b) if verb == "gets" else int(a) - int(b))
    if task.kind == "string":
        word = re.search(r'"(\w+)"', question).group(1)
        if "first letter" in question:
            return word[0]
        if "last letter" in question:
            return word[-1]
        return str(len(word)) if "How many" in question else word.upper()
    if task.kind == "list":
        values = json.loads(re.search(r"(\[.*\])", question).group(1))
        for words, pick in (("largest", max), ("smallest", min), ("How many", len)):
            if words in question:
                return str(pick(values))
        return str(values[0] if "first" in question else values[-1])
    if task.kind == "json":
        record = json.loads(re.search(r"In (\{.*\}), what", question).group(1))
        return str(record[re.search(r'value of "(\w+)"', question).group(1)])
    # A code question: evaluate its program's last expression statically.
    program = question.split("\n", 1)[1]
    names: dict[str, object] = {}
    for statement in ast.parse(program).body:
        if isinstance(statement, ast.Assign):
            value = ast.unparse(statement.value)
            names[statement.targets[0].id] = eval(value, {"len": len, "max": max}, dict(names))
        else:
            argument = ast.unparse(statement.value.args[0])
            return str(eval(argument, {"len": len, "max": max}, dict(names)))
    raise AssertionError(f"no print in {program!r}")


def test_every_expected_answer_is_right_when_worked_out_again():
    tasks = quality.tasks(seed=2026, count=120) + quality.tasks(seed=7, count=120)
    for task in tasks:
        assert task.expected == _recomputed(task), task.question
    # Neither empty nor all one answer: the tasks discriminate.
    assert len({t.expected for t in tasks}) > 40 and all(t.expected for t in tasks)


def _variant(question: str) -> str:
    """What a question asks, without its values: the operation, field or verb."""
    if " has " in question:
        return "gets" if " gets " in question else "gives away"
    if question.startswith("In {"):
        return question.split(", what", 1)[1]
    return re.sub(r'\d+|"\w+"|\[.*\]', "#", question)


def test_a_prompt_holds_solved_examples_of_the_task_s_own_variant_then_the_question():
    for task in quality.tasks(seed=5, count=60):
        assert task.prompt.startswith(quality.INSTRUCTION + "\n\n")
        assert task.prompt.endswith(f"Q: {task.question}\nA:")
        shots = re.findall(r"\nA: (.*)\n", task.prompt)
        assert len(shots) == quality.SHOTS
        assert task.prompt.count(f"Q: {task.question}\n") == 1
        if task.kind != "code":
            asked = re.findall(r"Q: (.*)\nA: ", task.prompt)
            assert {_variant(q) for q in asked} == {_variant(task.question)}, asked


def test_warm_up_tasks_are_never_measured_ones():
    measured = {t.prompt for t in quality.tasks(seed=1, count=24)}
    warmups = quality.warmup_tasks(seed=1, count=3)
    assert not measured & {t.prompt for t in warmups}


# Extraction and scoring


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        (" 85\n\nQ: What is", "85"),
        ("85", "85"),
        ("  Paris.\nmore", "Paris"),
        ("\n\n 12 \n", "12"),
        (" 3.5.", "3.5"),
        ("", ""),
        (" DOG", "DOG"),
    ],
)
def test_the_answer_is_the_first_line_stripped_without_one_full_stop(text, answer):
    assert quality.extract_answer(text) == answer


def test_scoring_is_an_exact_match_case_and_all():
    task = next(t for t in quality.tasks(seed=1, count=12) if t.kind == "json")
    assert quality.score(task, f" {task.expected}\n")["correct"] is True
    assert quality.score(task, f" {task.expected.lower()}x\n")["correct"] is False
    assert quality.score(task, f" The answer is {task.expected}\n")["correct"] is False


def test_a_score_keeps_text_a_result_can_carry():
    task = quality.tasks(seed=1, count=1)[0]
    scored = quality.score(task, "\x00" + "9" * 10_000)
    assert "\x00" not in scored["output_text"]
    assert len(scored["output_text"]) == quality.MAX_OUTPUT_CHARS
    assert len(scored["extracted"]) == quality.MAX_ANSWER_CHARS


# The statistics against known values


def test_newcombe_paired_interval_matches_the_published_value():
    # Fagerland, Lydersen and Laake, "Statistical Analysis of Contingency Tables" (2017),
    # chapter 8, the Cavo et al. (2012) table: -0.0621 (95% CI -0.1186 to -0.0046).
    low, high = stats.paired_difference_interval(59, 6, 16, 80)
    assert (round(low, 4), round(high, 4)) == (-0.1186, -0.0046)


def test_the_paired_interval_holds_the_difference_and_mirrors_when_the_sides_swap():
    for counts in [(10, 3, 1, 6), (0, 5, 0, 0), (12, 0, 0, 0), (3, 2, 7, 8), (0, 0, 0, 4)]:
        both, first, second, neither = counts
        low, high = stats.paired_difference_interval(*counts)
        difference = (first - second) / sum(counts)
        assert -1.0 <= low <= difference <= high <= 1.0
        swapped = stats.paired_difference_interval(both, second, first, neither)
        assert swapped == pytest.approx((-high, -low))
    # With no discordant pair the interval still has width: n pairs cannot prove no difference.
    low, high = stats.paired_difference_interval(12, 0, 0, 8)
    assert low < 0 < high


def test_the_paired_interval_refuses_no_pairs():
    with pytest.raises(ValueError, match="at least one pair"):
        stats.paired_difference_interval(0, 0, 0, 0)


@pytest.mark.parametrize(("first", "second"), [(2, 12), (6, 16), (0, 0), (5, 5), (0, 9), (30, 11)])
def test_mcnemar_exact_p_is_the_two_sided_binomial_test_on_the_discordant_pairs(first, second):
    expected = binomtest(first, first + second).pvalue if first + second else 1.0
    assert stats.mcnemar_exact_p(first, second) == pytest.approx(expected, rel=1e-12)
    # 2 and 12: twice (1 + 14 + 91) / 2^14, worked by hand.
    assert stats.mcnemar_exact_p(2, 12) == pytest.approx(2 * 106 / 16384)


def test_accuracy_is_the_share_of_scored_requests_correct_with_wilson_bounds():
    records = [{"quality": {"task_id": f"t{i}", "correct": i < 3}} for i in range(4)]
    figures = stats.accuracy_figures(records)
    interval = binomtest(3, 4).proportion_ci(method="wilson")
    assert figures["tasks"] == 4 and figures["correct"] == 3 and figures["accuracy"] == 0.75
    assert (figures["ci95_low"], figures["ci95_high"]) == pytest.approx(
        (interval.low, interval.high), rel=1e-6
    )
    assert stats.accuracy_figures([{"quality": None}]) is None


def test_the_difference_pairs_the_two_sides_by_task():
    spec = [{"quality": {"task_id": f"t{i}", "correct": c}} for i, c in enumerate([1, 1, 0, 0, 1])]
    base = [{"quality": {"task_id": f"t{i}", "correct": c}} for i, c in enumerate([1, 0, 1, 1, 1])]
    found = stats.quality_difference(spec, list(reversed(base)))
    assert (found["both_correct"], found["only_speculative_correct"]) == (2, 1)
    assert (found["only_baseline_correct"], found["neither_correct"]) == (2, 0)
    assert found["difference"] == pytest.approx(3 / 5 - 4 / 5)
    assert found["mcnemar_p"] == pytest.approx(1.0)


# The config


def test_defaults_are_greedy_with_every_kind():
    protocol = parse_config({"target_model": TARGET, "protocol": {"name": "quality"}}).protocol
    assert isinstance(protocol, QualityProtocol)
    assert protocol.sampling == "greedy" and protocol.kinds == list(quality.KINDS)


def test_the_protocol_s_parameters_change_the_config_key_and_the_order_of_kinds_does_not():
    keys = {
        quality_config(12).key,
        quality_config(16).key,
        quality_config(12, task_seed=5).key,
        quality_config(12, max_tokens=12).key,
    }
    assert len(keys) == 4
    assert (
        quality_config(4, kinds=["code", "json"]).key
        == quality_config(4, kinds=["json", "code"]).key
    )


@pytest.mark.parametrize(
    ("protocol", "field", "words"),
    [
        ({"kinds": ["poetry"]}, "kinds", "unknown kind 'poetry'"),
        ({"kinds": []}, "kinds", "at least one kind"),
        ({"kinds": ["code", "code"]}, "kinds", "listed twice"),
        ({"tasks": 0}, "tasks", "greater than or equal to 1"),
        ({"sampling": "temperature 0.8"}, "sampling", "greedy"),
    ],
)
def test_a_bad_parameter_is_a_field_error(protocol, field, words):
    with pytest.raises(ValidationError) as caught:
        BenchmarkConfig.model_validate(
            {"target_model": TARGET, "protocol": {"name": "quality", **protocol}}
        )
    messages = " ".join(" ".join(v) for v in field_errors(caught.value).values())
    assert words in messages and field in " ".join(field_errors(caught.value))


def test_the_plan_warms_up_then_asks_each_task_once_in_order_greedily():
    config = quality_config(8, warmup=2)
    plan = protocols.plan_requests(config, vocab_size=256)
    tasks = quality.tasks(seed=config.protocol.task_seed, count=8)
    assert [s.phase for s in plan] == ["warmup"] * 2 + ["measure"] * 8
    assert [s.prompt for s in plan[2:]] == [t.prompt for t in tasks]
    assert all(s.output_tokens == OUTPUT_TOKENS and s.body()["temperature"] == 0.0 for s in plan)
    assert all(s.body()["top_k"] == 1 for s in plan)
    # The paired baseline asks the same tasks.
    assert protocols.plan_requests(config.baseline(), vocab_size=256) == plan
    budget = protocols.token_budget(config, with_baseline=False)
    assert budget["requests"] == 10 and budget["generated_tokens"] == 10 * OUTPUT_TOKENS
    assert config.effective_ctx_size > max(len(t.prompt) // 4 for t in tasks) + 8


# The door: scores and figures derived again


RIGHT = [True, True, False, True, False, True]
BASE = [True, False, False, True, True, True]


def test_a_quality_result_carries_both_accuracies_and_the_paired_difference(models_dir):
    result = quality_result(RIGHT, BASE, models_dir=models_dir)
    assert result["summary"]["quality"]["correct"] == 4
    assert result["baseline"]["summary"]["quality"]["accuracy"] == pytest.approx(4 / 6)
    difference = result["summary"]["quality_difference"]
    assert difference["difference"] == 0.0 and difference["pairs"] == 6
    assert (difference["only_speculative_correct"], difference["only_baseline_correct"]) == (1, 1)
    assert difference["ci95_low"] < 0 < difference["ci95_high"]
    assert load_result(result).summary.quality.tasks == 6


def test_the_run_command_s_line_gives_both_accuracies_and_the_difference(models_dir):
    from runner.cli import summary_line

    line = summary_line(load_result(quality_result(RIGHT, BASE, models_dir=models_dir)))
    assert "accuracy 4/6 (66.7%, 95% CI [" in line
    assert "baseline's 4/6; difference +0.0 points (paired 95% CI [-" in line
    assert "McNemar p 1.000" in line


def refused(result: dict) -> str:
    with pytest.raises(ResultError) as caught:
        load_result(result)
    return str(caught.value)


def test_a_claimed_accuracy_its_scores_contradict_is_refused(models_dir):
    result = quality_result(RIGHT, BASE, models_dir=models_dir)
    result["summary"]["quality"] |= {"correct": 6, "accuracy": 1.0}
    assert "summary.quality.correct is 6, but the scored requests give 4" in refused(result)


def test_a_claimed_difference_its_pairs_contradict_is_refused(models_dir):
    result = quality_result(RIGHT, BASE, models_dir=models_dir)
    result["summary"]["quality_difference"]["difference"] = 0.5
    assert "summary.quality_difference.difference is 0.5" in refused(result)


def test_a_record_marked_correct_whose_text_is_wrong_is_refused(models_dir):
    result = quality_result(RIGHT, BASE, models_dir=models_dir)
    wrong = result["baseline"]["requests"][1]
    wrong["quality"]["correct"] = True
    message = refused(result)
    assert "baseline: requests.1.quality.correct is true" in message
    assert "its output text give false" in message


def test_a_record_whose_expected_answer_is_not_the_task_s_is_refused(models_dir):
    result = quality_result(RIGHT, BASE, models_dir=models_dir)
    score = result["requests"][0]["quality"]
    score |= {"expected": score["extracted"] + "0"}
    assert "requests.0.quality.expected is" in refused(result)


def test_a_record_with_the_extracted_answer_rewritten_is_refused(models_dir):
    result = quality_result(RIGHT, BASE, models_dir=models_dir)
    score = result["requests"][2]["quality"]
    score |= {"extracted": result["requests"][2]["quality"]["expected"], "correct": True}
    assert "requests.2.quality.extracted is" in refused(result)


def test_a_quality_record_missing_is_refused(models_dir):
    result = quality_result(RIGHT, BASE, models_dir=models_dir)
    result["requests"][3]["quality"] = None
    assert "requests.3.quality: missing" in refused(result)


@pytest.mark.parametrize(
    ("where", "value", "words"),
    [
        ("output_text", "x\x00y", "NUL"),
        ("extracted", "\x00", "NUL"),
        ("output_text", "9" * 100_000, "at most 4096 characters"),
        ("expected", "9" * 100_000, "at most 256 characters"),
        ("correct", float("nan"), "valid boolean"),
    ],
)
def test_hostile_values_in_a_score_get_a_clear_error(models_dir, where, value, words):
    result = quality_result(RIGHT, BASE, models_dir=models_dir)
    result["requests"][0]["quality"][where] = value
    message = refused(result)
    assert f"requests.0.quality.{where}" in message and words in message


def test_a_nan_accuracy_is_refused(models_dir):
    result = quality_result(RIGHT, BASE, models_dir=models_dir)
    result["summary"]["quality"]["accuracy"] = math.nan
    assert "summary.quality.accuracy" in refused(result)


def test_a_score_on_another_protocol_is_refused(models_dir):
    from tests.support.protocol_results import categories_config, category_records
    from tests.support.protocol_results import protocol_result as build

    config = categories_config(["code"])
    records = category_records(config, {"code": 100.0}, None)
    task = quality.tasks(seed=1, count=1)[0]
    records[0]["quality"] = quality.score(task, task.expected)
    with pytest.raises(ValidationError, match="a score, but the protocol is not quality"):
        build(config, records, None, models_dir=models_dir)


# On the real engine


@pytest.mark.engine
def test_the_quality_protocol_runs_on_llama_server_with_its_paired_baseline(models_dir, engine):
    config = parse_config(
        {"target_model": TARGET, "draft_model": TARGET, "spec_types": "draft-simple",
         "n_max": 4, "threads": 2,
         "protocol": {"name": "quality", "tasks": 6, "max_tokens": 6}}
    )  # fmt: skip
    result = run_benchmark(config, models_dir=models_dir, engine=engine, with_baseline=True)
    data = result.model_dump(mode="json")
    tasks = quality.tasks(seed=config.protocol.task_seed, count=6)

    for section in (data, data["baseline"]):
        scores = [r["quality"] for r in section["requests"]]
        assert [s["task_id"] for s in scores] == [t.task_id for t in tasks]
        assert [s["expected"] for s in scores] == [t.expected for t in tasks]
        # The tiny model's text is scored as it came: its answer is the text's first line.
        assert all(s["extracted"] == quality.extract_answer(s["output_text"]) for s in scores)
        assert section["summary"]["quality"]["tasks"] == 6
    # Greedy self-drafting: the same outputs, so the same answers on both sides.
    assert [r["quality"] for r in data["requests"]] == [
        r["quality"] for r in data["baseline"]["requests"]
    ]
    difference = data["summary"]["quality_difference"]
    assert difference["difference"] == 0.0 and difference["pairs"] == 6
    assert difference["only_speculative_correct"] == difference["only_baseline_correct"] == 0
