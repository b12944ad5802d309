"""Per-category figures (selectors.categories): the category chart gives each speedup its
interval over prompts and the verdicts' word on it."""

from __future__ import annotations

from leaderboard import selectors, services, verdicts


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
