"""What the charts are given to show (selectors.board_charts, selectors.charts), the compare
page's picker (selectors.compare) and a job's cost on a CPU host (selectors.jobs): each chart's
colour comes with the verdicts' word from the selector, never decided in the page."""

from __future__ import annotations

import pytest

from leaderboard import selectors, services, verdicts
from leaderboard.models import Run
from leaderboard.selectors.charts import concurrency_speedup_lines, context_groups
from leaderboard.services.board import mark_test_weights
from tests.support.measured_configs import measure

# Against the usual baseline (50, 52 tok/s): clearly faster, within noise, clearly slower.
SPEEDS = {4: [100.0, 104.0], 2: [60.0, 60.5], 5: [30.0, 31.0]}


@pytest.fixture
def measured(user, hardware, models, make_result, enqueued):
    # Cleared of their test-weights mark, as an admin could: only ranked rows are charted.
    mark_test_weights(models=models.values(), test_weights=False)
    return {
        n_max: measure(user, hardware, make_result, n_max, decode).config
        for n_max, decode in SPEEDS.items()
    }


def test_the_speedup_chart_gives_each_bar_the_verdicts_word_on_it(measured, hardware):
    chart = selectors.speedup_chart(hardware=hardware.slug)

    found = {point["label"]: point for point in chart["points"]}
    assert found["draft-simple · n_max 4"]["verdict"] == verdicts.advice.FASTER
    assert found["draft-simple · n_max 5"]["verdict"] == verdicts.advice.SLOWER
    assert found["draft-simple · n_max 2"]["verdict"] == verdicts.advice.UNCLEAR
    for point in chart["points"]:
        interval = (point["ci95_low"], point["ci95_high"])
        assert point["verdict"] == verdicts.against_baseline(interval, point["speedup"])


def test_the_hardware_comparison_gives_the_best_speedup_its_verdict(measured, hardware):
    comparison = selectors.hardware_comparison_for(target="tiny-qwen3")

    [row] = comparison["rows"]
    # The best speedup is n_max 4's, whose whole interval is above 1.
    assert row["speedup_key"] == measured[4].key
    assert row["speedup_verdict"] == verdicts.advice.FASTER


def concurrency_line(key: str, *, baseline: bool, speedups: list[float | None]) -> dict:
    rows = [
        {
            "concurrency": level,
            "speedup": speedup,
            "speedup_ci95_low": None if speedup is None else speedup - 0.1,
            "speedup_ci95_high": None if speedup is None else speedup + 0.1,
            "verdict": "" if speedup is None else ("faster" if speedup > 1.1 else "slower"),
        }
        for level, speedup in zip([1, 2, 4], speedups, strict=True)
    ]
    return {"key": key, "short_label": f"config {key}", "baseline": baseline, "rows": rows}


def test_speedup_against_concurrency_keeps_speculative_levels_that_have_a_baseline():
    lines = [
        concurrency_line("base", baseline=True, speedups=[None, None, None]),
        concurrency_line("spec", baseline=False, speedups=[1.6, None, 0.8]),
        concurrency_line("unpaired", baseline=False, speedups=[None, None, None]),
    ]

    [line] = concurrency_speedup_lines(lines=lines)

    assert line["key"] == "spec" and line["levels"] == [1, 4]
    assert line["speedup"] == [1.6, 0.8]
    assert line["ci95_low"] == pytest.approx([1.5, 0.7])
    assert line["verdicts"] == ["faster", "slower"]


def test_context_lines_are_grouped_one_chart_per_target_and_hardware():
    lines = [
        {"target_name": "b", "hardware_slug": "h200", "gpu_name": "H200"},
        {"target_name": "a", "hardware_slug": "h200", "gpu_name": "H200"},
        {"target_name": "b", "hardware_slug": "h200", "gpu_name": "H200"},
        {"target_name": "b", "hardware_slug": "2x-h200", "gpu_name": "H200"},
    ]

    groups = context_groups(lines)

    assert [(g["target_name"], g["lines"]) for g in groups] == [
        ("a", [1]),
        ("b", [0, 2]),
        ("b", [3]),
    ]


def test_the_compare_picker_lists_configs_by_readable_labels(measured, hardware):
    choices = {choice["key"]: choice["label"] for choice in selectors.compare_choices()}

    label = choices[measured[4].key]
    for part in ("tiny-qwen3", "draft-simple", "n_max 4", "quick", hardware.gpu_name):
        assert part in label
    # The baseline the three were measured against is a choice too.
    assert measured[4].baseline.key in choices


def test_the_picker_takes_a_label_a_key_or_a_part_of_one_label(measured):
    choices = selectors.compare_choices()
    label = next(c["label"] for c in choices if c["key"] == measured[2].key)

    keys = selectors.picked_keys(picks=[label, measured[5].key, "N_MAX 4", "  "], choices=choices)

    assert keys == [measured[2].key, measured[5].key, measured[4].key]


@pytest.mark.parametrize(
    ("typed", "words"),
    [("draft-simple", "matches 3 configs"), ("a text no config has", "matches no config")],
)
def test_the_picker_refuses_text_that_names_several_configs_or_none(measured, typed, words):
    with pytest.raises(selectors.ComparisonRefused) as refused:
        selectors.picked_keys(picks=[typed], choices=selectors.compare_choices())

    assert words in refused.value.message


def test_picked_configs_land_on_the_keys_address_and_the_picker_shows_their_labels(
    client, measured
):
    response = client.get("/compare/", {"config": ["n_max 5", "n_max 4", ""]})

    assert response.status_code == 302
    assert response["Location"] == f"/compare/?keys={measured[5].key}%2C{measured[4].key}"
    page = client.get(response["Location"]).content.decode()
    assert 'id="compare-table"' in page
    label = next(c["label"] for c in selectors.compare_choices() if c["key"] == measured[5].key)
    assert f'id="compare-pick-1" list="compare-choices" value="{label}"' in page


def test_a_cpu_host_shows_cpu_seconds_not_zero_gpu_seconds(
    client, user, hardware, models, make_result, enqueued
):
    job = services.submit_config(
        owner=user,
        data={
            "target_model": "tiny-qwen3.gguf",
            "protocol": {"name": "quick", "n_predict": 64, "runs": 3},
        },
        hardware_slug=hardware.slug,
    )
    result = make_result(job.config.key, [20.0, 21.0])
    result["engine"]["backend"] = "cpu"
    result["summary"] |= {"gpu_seconds": 0.0, "engine_seconds": 14.0}
    services.record_result(job_id=job.pk, result=result)
    run = Run.objects.get(job=job)
    assert run.engine_backend == "cpu"

    cost = selectors.job_cost(job=selectors.job_by_id(job_id=job.pk))

    assert cost["gpu_seconds"] is None and cost["engine_seconds"] == 14.0
    client.force_login(user)
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "14.0 CPU-seconds" in page and "GPU-seconds" not in page
    assert "14.0 CPU-s" in client.get("/jobs/").content.decode()
    assert client.get(f"/api/v1/jobs/{job.pk}").json()["gpu_seconds"] is None


def depth_point(tokens: int, mean: float, stdev: float, n: int) -> dict:
    stats = {"mean": mean, "stdev": stdev, "n": n, "ci95_low": None, "ci95_high": None}
    return {"input_tokens": tokens, "decode_tokens_per_second": stats}


def test_each_depth_gives_its_speedup_interval_and_verdict():
    from leaderboard.selectors.definitions import depth_rows

    own = [depth_point(512, 200.0, 4.0, 8), depth_point(4096, 100.0, 30.0, 4)]
    baseline = [depth_point(512, 100.0, 2.0, 8), depth_point(4096, 95.0, 30.0, 4)]

    rows = depth_rows(own, baseline)

    sharp, loose = rows
    assert sharp["speedup"] == pytest.approx(2.0)
    assert sharp["speedup_ci95_low"] < 2.0 < sharp["speedup_ci95_high"]
    assert sharp["speedup_verdict"] == verdicts.advice.FASTER
    # 100 over 95 with a wide spread on four requests each: the interval holds 1.
    assert loose["speedup_ci95_low"] < 1 < loose["speedup_ci95_high"]
    assert loose["speedup_verdict"] == verdicts.advice.UNCLEAR
    # Without a baseline at that depth: no speedup, no interval, no word.
    [alone] = depth_rows([depth_point(8192, 50.0, 1.0, 4)], baseline)
    assert alone["speedup"] is None and alone["speedup_ci95_low"] is None
    assert alone["speedup_verdict"] is None


def test_the_category_chart_gives_each_speedup_its_interval_and_verdict(
    user, hardware, models, tiny_models
):
    from tests.support.protocol_results import categories_config, category_records, protocol_result

    directory = next(iter(tiny_models.values())).parent
    config = categories_config(["code", "translation"])
    result = protocol_result(
        config,
        category_records(
            config, {"code": 170.0, "translation": 90.0}, {"code": 0.9, "translation": 0.3}
        ),
        category_records(config.baseline(), {"code": 100.0, "translation": 100.0}, None),
        models_dir=directory,
    )
    services.import_runner_result(owner=user, hardware=hardware, result=result, source="test")
    entry = selectors.best_entry(config=selectors.config_by_key(key=config.key))

    chart = selectors.category_view(entry=entry)["chart"]

    for i, speedup in enumerate(chart["speedup"]):
        low, high = chart["speedup_ci95_low"][i], chart["speedup_ci95_high"][i]
        interval = (low, high) if low is not None else None
        assert chart["speedup_verdicts"][i] == verdicts.against_baseline(interval, speedup)
    assert chart["speedup_verdicts"][0] == verdicts.advice.FASTER
