"""The config service (leaderboard.services.configs): a protocol's variant, what parts the
rankings of one protocol, as the service computes it and as migration 0014 filled it; and who a
self-reported config's key says reported it (`reporter_identity`): the user name only when the
uploader published it, else a pseudonym stored nowhere public, with migration 0019 re-keying the
rows made before."""

from __future__ import annotations

import json
import re

import pytest
from django.core.management import call_command
from django.db.migrations.loader import MigrationLoader
from django.test import Client

from leaderboard import services
from leaderboard.models import SELF_REPORTED_UPLOAD_SOURCE, Config, LeaderboardEntry, Run
from leaderboard.services.configs import SEED_CSV_SOURCE, digest, protocol_variant
from tests.support.results import result_file
from tests.support.seed_kit import SEED_CSV


def test_the_variant_leaves_out_how_often_a_protocol_measures():
    base = {"name": "concurrency", "levels": [1, 2], "input_tokens": 64, "output_tokens": 32}
    assert protocol_variant(base | {"rounds": 3, "warmup": 1, "seed": 1}) == protocol_variant(
        base | {"rounds": 9, "warmup": 0, "seed": 2}
    )
    assert protocol_variant(base) != protocol_variant(base | {"levels": [1, 2, 4]})
    assert protocol_variant(base) != protocol_variant(base | {"output_tokens": 64})
    assert protocol_variant(None) == "" and protocol_variant("x") == ""


def test_the_migration_fills_the_variant_of_stored_configs_as_the_service_computes_it(migrate):
    old = migrate([("leaderboard", "0013_hub_models")]).get_model("leaderboard", "Config")
    protocol = {"name": "concurrency", "levels": [1, 2], "input_tokens": 64, "rounds": 2}
    old.objects.create(key="a" * 16, canonical={"protocol": protocol}, label="measured",
                       target_name="t", protocol="concurrency")  # fmt: skip
    old.objects.create(key="b" * 16, canonical={"source": "seed"}, label="imported",
                       target_name="t", protocol="seed-csv", self_reported=True)  # fmt: skip
    old.objects.create(key="c" * 16, canonical={"protocol": "not a dict"}, label="odd",
                       target_name="t", protocol="quick")  # fmt: skip

    new = migrate([("leaderboard", "0014_config_protocol_variant")]).get_model(
        "leaderboard", "Config"
    )
    variants = dict(new.objects.values_list("key", "protocol_variant"))
    assert variants == {"a" * 16: protocol_variant(protocol), "b" * 16: "", "c" * 16: ""}


GPU = "RTX 4090"
BASELINE = {"target_model": "tiny-qwen3.gguf", "protocol": {"name": "quick", "n_predict": 64}}


@pytest.fixture
def grace(django_user_model):
    return django_user_model.objects.create_user(username="grace", password="x")


def upload_run(make_result, uploader, speeds: list[float], *, publish_name: bool) -> Run:
    [run] = services.record_self_reported_result(
        result=result_file(make_result, BASELINE, speeds),
        hardware_name=GPU,
        uploaded_by=uploader,
        publish_name=publish_name,
    )
    return run


def upload(make_result, uploader, speeds: list[float], *, publish_name: bool) -> Config:
    return upload_run(make_result, uploader, speeds, publish_name=publish_name).config


def key_over_name(config: Config, name: str | None) -> str:
    """The key as it was made before: a hash over the canonical JSON and the user name."""
    canonical = {k: v for k, v in config.canonical.items() if k != "source"}
    identity = {"source": SELF_REPORTED_UPLOAD_SOURCE, "config": canonical, "uploaded_by": name}
    return digest(identity)[:16]


def names_it(config: Config, django_user_model) -> set[str]:
    """The user names whose hash gives this config's key."""
    names = django_user_model.objects.values_list("username", flat=True)
    return {name for name in names if key_over_name(config, name) == config.key}


def public_text(config: Config) -> str:
    pages = [f"/configs/{config.key}/", f"/api/v1/configs/{config.key}"]
    return "".join(Client().get(path).content.decode() for path in pages)


def test_an_unpublished_uploads_key_is_no_hash_over_any_user_name(
    db, user, grace, make_result, django_user_model
):
    config = upload(make_result, user, [100.0, 110.0], publish_name=False)

    assert names_it(config, django_user_model) == set()
    # As a word: a random hex key may hold the letters a, d, a (ada1f46e...).
    assert not re.search(r"\bada\b", public_text(config))
    assert all(run.provenance["uploaded_by"] is None for run in config.runs.all())


def test_one_uploaders_unpublished_batches_of_a_config_still_share_a_row(
    db, user, grace, make_result
):
    first = upload(make_result, user, [100.0, 110.0], publish_name=False)
    again = upload(make_result, user, [200.0, 210.0], publish_name=False)
    other = upload(make_result, grace, [300.0, 310.0], publish_name=False)

    assert first == again != other
    assert first.runs.count() == 2 and other.runs.count() == 1
    assert LeaderboardEntry.objects.get(config=first).tokens_per_second == pytest.approx(205.0)


def test_published_and_unpublished_results_of_one_uploader_are_rows_of_their_own(
    db, user, make_result, django_user_model
):
    hidden = upload(make_result, user, [100.0, 110.0], publish_name=False)
    shown = upload(make_result, user, [200.0, 210.0], publish_name=True)

    assert hidden != shown
    # A published name keys its rows as it always has: their addresses did not move.
    assert names_it(shown, django_user_model) == {"ada"}
    assert names_it(hidden, django_user_model) == set()
    assert "ada" not in public_text(hidden)


def test_an_unpublished_csv_import_names_nobody_and_adds_nothing_the_second_time(db, user):
    first = services.import_leaderboard_csv(
        content=SEED_CSV.read_bytes(), hardware_name=GPU, uploaded_by=user
    )
    again = services.import_leaderboard_csv(
        content=SEED_CSV.read_bytes(), hardware_name=GPU, uploaded_by=user
    )

    assert first.runs_created == again.runs_skipped == 22 and again.runs_created == 0
    for config in first.configs:
        identity = {
            "source": SEED_CSV_SOURCE,
            "run_name": config.canonical["run_name"],
            "target_name": config.canonical["target_name"],
            "baseline_run_name": config.canonical["baseline_run_name"],
            "reported_by": f"user:{user.pk}",
        }
        assert config.key != digest(identity)[:16]
        assert config.canonical["reported_by"] == "unpublished"
    assert f"user:{user.pk}" not in public_text(first.configs[0])


LATEST = MigrationLoader(None, ignore_no_migrations=True).graph.leaf_nodes("leaderboard")[0][1]


# --- migration 0019: the rows made before ---------------------------------------------------


def made_before(make_result, uploader, speeds: list[float]) -> Run:
    """An unpublished upload as the code before 0019 stored it: keyed over the user name, the
    name left out of the run's provenance."""
    run = upload_run(make_result, uploader, speeds, publish_name=True)
    run.provenance = run.provenance | {"uploaded_by": None}
    run.save(update_fields=["provenance"])
    return run


def csv_made_before(uploader) -> list[Config]:
    report = services.import_leaderboard_csv(
        content=SEED_CSV.read_bytes(), hardware_name="RTX 3090", uploaded_by=uploader,
        publish_name=True,
    )  # fmt: skip
    for run in Run.objects.filter(config__in=report.configs):
        run.provenance = run.provenance | {"uploaded_by": None}
        run.save(update_fields=["provenance"])
    return report.configs


def after_0019(migrate) -> None:
    """Back to before 0019, then forward through it to the latest schema (the models the
    assertions read are today's)."""
    migrate([("leaderboard", "0018_multi_gpu_hardware")])
    migrate([("leaderboard", "0019_reporter_pseudonyms")])
    migrate([("leaderboard", LATEST)])


def test_the_migration_rekeys_unpublished_rows_as_the_services_now_key_them(
    migrate, user, grace, make_result, django_user_model
):
    hidden = made_before(make_result, user, [100.0, 110.0]).config
    published = upload(make_result, grace, [300.0, 310.0], publish_name=True)
    imported = csv_made_before(user)
    entries = LeaderboardEntry.objects.count()
    assert names_it(hidden, django_user_model) == {"ada"}

    after_0019(migrate)

    hidden.refresh_from_db()
    published.refresh_from_db()
    assert names_it(hidden, django_user_model) == set()
    assert names_it(published, django_user_model) == {"grace"}
    assert LeaderboardEntry.objects.count() == entries
    # The services key a new unpublished upload by the same person to the re-keyed row.
    assert upload(make_result, user, [120.0, 130.0], publish_name=False) == hidden
    for config in imported:
        config.refresh_from_db()
        assert config.canonical["reported_by"] == "unpublished"
    again = services.import_leaderboard_csv(
        content=SEED_CSV.read_bytes(), hardware_name="RTX 3090", uploaded_by=user
    )
    assert again.runs_created == 0 and again.runs_skipped == 22
    assert {c.pk for c in again.configs} == {c.pk for c in imported}


def test_the_migration_splits_a_row_that_mixed_published_and_unpublished_runs(
    migrate, user, make_result, django_user_model, capsys
):
    mixed = upload(make_result, user, [200.0, 210.0], publish_name=True)
    hidden_run = made_before(make_result, user, [100.0, 110.0])
    assert hidden_run.config == mixed and mixed.runs.count() == 2

    after_0019(migrate)

    assert "refresh_leaderboard" in capsys.readouterr().out
    call_command("refresh_leaderboard")
    hidden_run.refresh_from_db()
    split = hidden_run.config
    assert split != mixed and names_it(split, django_user_model) == set()
    assert list(mixed.runs.values_list("provenance__uploaded_by", flat=True)) == ["ada"]
    rows = {row.config_id: row for row in LeaderboardEntry.objects.all()}
    assert rows[mixed.pk].tokens_per_second == pytest.approx(205.0)
    assert rows[split.pk].tokens_per_second == pytest.approx(105.0)
    assert json.dumps(split.canonical).count("ada") == 0
    assert upload(make_result, user, [120.0, 130.0], publish_name=False) == split
