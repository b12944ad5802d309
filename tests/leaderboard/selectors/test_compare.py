"""The compare rules (selectors.answers.compare): configs of different workloads are shown side by
side but never set against each other; a difference's interval is Welch's with its exact df. The
picker lists configs by readable labels and takes a label, a key or a part of one label."""

from __future__ import annotations

import pytest

from leaderboard import selectors, services
from leaderboard.models import Job
from leaderboard.selectors.answers.compare import welch_difference
from tests.support.baselines import with_baseline_section
from tests.support.measured_configs import draft_simple, measure, measure_three_ways


def test_a_config_of_another_workload_is_shown_but_not_compared(
    user, hardware, models, make_result, enqueued
):
    quick = measure(user, hardware, make_result, 4, [100.0, 101.0, 99.0])
    other_prompt = draft_simple(3) | {
        "protocol": {"name": "quick", "n_predict": 64, "runs": 3, "prompt": "a a a a a a a a"}
    }
    job: Job = services.submit_config(owner=user, data=other_prompt, hardware_slug=hardware.slug)
    services.record_result(
        job_id=job.pk,
        result=with_baseline_section(
            make_result(job.config.key, [300.0, 301.0, 299.0], draft=(40, 30), tau=2.2),
            make_result(job.config.baseline.key, [50.0, 52.0]),
        ),
    )

    result = selectors.compare_configs(keys=[quick.config.key, job.config.key])

    [difference] = [d for d in result["differences"] if d["config_key"] == job.config.key]
    assert difference["difference"] is None and difference["ci95_low"] is None
    assert "measured different workloads" in difference["note"]


def test_the_welch_interval_uses_its_degrees_of_freedom_unrounded():
    found = welch_difference(mean_a=10.0, stdev_a=1.0, n_a=3, mean_b=8.0, stdev_b=2.0, n_b=4)
    # df = 4.571 (Welch–Satterthwaite): t(0.975, 4.571) = 2.6448, not t(4) = 2.776.
    assert found["df"] == pytest.approx(4.5714, rel=1e-3)
    half = (found["high"] - found["low"]) / 2
    assert half == pytest.approx(2.6448 * (1 / 3 + 4 / 4) ** 0.5, rel=1e-3)


# The compare page's picker: configs by readable labels.


@pytest.fixture
def measured(user, hardware, models, make_result, enqueued):
    return measure_three_ways(user, hardware, models, make_result)


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
