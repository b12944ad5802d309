"""The config service (leaderboard.services.configs): a protocol's variant, what parts the
rankings of one protocol (its levels and lengths, never how often it measured), as the service
computes it and as the migration filled it for configs stored before."""

from __future__ import annotations

from leaderboard.services.configs import protocol_variant


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
