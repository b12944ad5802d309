"""Per-category figures (selectors.evidence.categories): the category chart gives each speedup its
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


def test_a_category_where_nothing_was_drafted_gets_no_colour_and_no_verdict(
    user, hardware, models, tiny_models
):
    from tests.support.protocol_results import categories_config, category_records, protocol_result

    directory = next(iter(tiny_models.values())).parent
    config = categories_config(["code", "translation"])
    records = category_records(
        config, {"code": 170.0, "translation": 120.0}, {"code": 0.9, "translation": 0.5}
    )
    # The translation requests drafted nothing: their 1.20x is not the draft's doing.
    for record in records:
        if record["point"] == 1:
            record.update(draft_n=0, draft_n_accepted=0, verify_steps=0, tau=None)
    result = protocol_result(
        config,
        records,
        category_records(config.baseline(), {"code": 100.0, "translation": 100.0}, None),
        models_dir=directory,
    )
    services.import_runner_result(owner=user, hardware=hardware, result=result, source="test")
    entry = selectors.best_entry(config=selectors.config_by_key(key=config.key))

    rows = {row["category"]: row for row in selectors.category_view(entry=entry)["rows"]}
    assert rows["translation"]["thin_drafting"] and not rows["code"]["thin_drafting"]
    assert rows["translation"]["evidence_note"] == "anecdotal: from 0 drafted tokens"
    chart = selectors.category_view(entry=entry)["chart"]
    assert chart["speedup_verdicts"] == [verdicts.advice.FASTER, None]
    [row] = selectors.category_heatmap(target_name=entry.target_name, hardware_slug=hardware.slug)[
        "rows"
    ]
    code, translation = row["cells"]
    assert code["speedup_shade"].startswith("gain-") and translation["speedup_shade"] == ""
