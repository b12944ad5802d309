"""A user's own DFlash draft through the roads a user takes: registered by path (POST /models),
by Hugging Face reference (POST /models with hf_repo, or a model request an admin approves), then
paired with a target in a submission (POST /submissions). A draft llama.cpp could not load with
any target is refused at registration; one made for another target when a config pairs them;
each with a field error naming the GGUF field, and nothing stored or queued."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from leaderboard import services
from leaderboard.models import Config, Job, ModelFile, ModelRequest
from tests.support.api_clients import SPECULATIVE
from tests.support.gguf_files import write_dflash_variants
from tests.support.hub_server import HubServer

REPO = "someone/my-dflash-draft"


@pytest.fixture
def drafts_dir(settings, tiny_models, tmp_path) -> Path:
    """A models directory holding the tiny target and draft and the draft's crafted variants,
    with a truncated draft and a file that is not GGUF beside them."""
    for name in ("tiny-qwen3.gguf", "tiny-dflash.gguf"):
        shutil.copy(tiny_models[name], tmp_path / name)
    write_dflash_variants(tiny_models["tiny-dflash.gguf"], tmp_path)
    whole = tiny_models["tiny-dflash.gguf"].read_bytes()
    (tmp_path / "truncated.gguf").write_bytes(whole[: len(whole) // 2])
    (tmp_path / "not-gguf.gguf").write_bytes(b"PK\x03\x04 a zip file, not a model")
    settings.SPECBOARD_MODELS_DIR = tmp_path
    return tmp_path


# What a user sees for each draft llama.cpp could not load whatever its target.
BROKEN_DRAFTS = [
    ("mask-out-of-range", "tokenizer.ggml.mask_token_id 256, outside its vocabulary of 256"),
    ("no-mask", "has no tokenizer.ggml.mask_token_id key"),
    ("block-size-1", "has dflash.block_size 1"),
    (
        "fc-one-layer-wide",
        "has tensor fc.weight of shape {64, 64}, but llama.cpp expects {128, 64}",
    ),
    ("no-ffn-down", "has no tensor blk.1.ffn_down.weight, which llama.cpp loads"),
    ("mask-not-a-number", "has tokenizer.ggml.mask_token_id '<mask>', which is not a whole"),
    ("truncated", "is truncated or corrupt"),
    ("not-gguf", "is not a GGUF file (bad magic)"),
]


@pytest.mark.parametrize(("variant", "says"), BROKEN_DRAFTS)
def test_registering_a_broken_draft_by_path_is_a_field_error_and_stores_nothing(
    admin, drafts_dir, variant, says
):
    response = admin.post("/api/v1/models", {"path": f"{variant}.gguf"}, format="json")

    assert response.status_code == 400
    assert says in " ".join(response.json()["path"])
    assert not ModelFile.objects.exists()


def test_a_good_draft_registers_as_a_draft_with_what_the_checks_read(admin, drafts_dir):
    response = admin.post("/api/v1/models", {"path": "tiny-dflash.gguf"}, format="json")

    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["role"] == "draft" and body["metadata"]["mask_token_id"] == 255
    assert body["metadata"]["tensor_shapes"]["fc.weight"] == [128, 64]


@pytest.fixture
def hub(settings, drafts_dir):
    with HubServer() as server:
        names = ("mask-out-of-range", "fc-one-layer-wide", "truncated", "not-gguf")
        server.commit(REPO, {f"{name}.gguf": drafts_dir / f"{name}.gguf" for name in names})
        settings.SPECBOARD_HF_ENDPOINT = server.endpoint
        settings.SPECBOARD_HF_TOKEN = None
        yield server


@pytest.mark.parametrize(
    ("variant", "says"),
    [case for case in BROKEN_DRAFTS if case[0] in {"mask-out-of-range", "fc-one-layer-wide"}]
    + [("truncated", "is truncated or corrupt"), ("not-gguf", "is not a GGUF file")],
)
def test_registering_a_broken_draft_by_hub_reference_is_a_field_error_and_stores_nothing(
    admin, hub, variant, says
):
    body = {"hf_repo": REPO, "hf_file": f"{variant}.gguf"}
    response = admin.post("/api/v1/models", body, format="json")

    assert response.status_code == 400
    assert says in " ".join(response.json()["hf_file"])
    assert not ModelFile.objects.exists()


def test_a_users_request_for_a_broken_draft_cannot_be_approved_and_stays_pending(
    hub, user, django_user_model
):
    root = django_user_model.objects.create_user(username="root-admin", is_staff=True)
    asked = services.request_model(requester=user, hf_repo=REPO, hf_file="mask-out-of-range.gguf")

    with pytest.raises(services.RegistrationError) as refused:
        services.approve_model_request(model_request=asked, admin=root)

    assert "tokenizer.ggml.mask_token_id 256" in refused.value.errors["hf_file"][0]
    assert ModelRequest.objects.get().state == "pending" and not ModelFile.objects.exists()


# Paired with a target in a submission ------------------------------------------------------


@pytest.fixture
def registered(drafts_dir, tiny_models) -> None:
    """The tiny target, and drafts that register but do not fit it: two crafted ones, the
    fixtures' narrower draft and their pre-merge one (registered, refused when paired)."""
    for name in ("tiny-dflash-wide.gguf", "tiny-dflash-draft-premerge.gguf"):
        shutil.copy(tiny_models[name], drafts_dir / name)
    names = ("tiny-qwen3", "layer-beyond-target", "other-tokens")
    names += ("tiny-dflash-wide", "tiny-dflash-draft-premerge")
    for name in names:
        services.register_model(path=f"{name}.gguf")


@pytest.mark.parametrize(
    ("draft", "says"),
    [
        (
            "layer-beyond-target.gguf",
            "reads target layers [1, 4] (dflash.target_layers), but target tiny-qwen3.gguf has "
            "only 4 layers (layer 4 is out of range)",
        ),
        (
            "other-tokens.gguf",
            "has as many tokens as target tiny-qwen3.gguf but other token texts or another "
            "tokenizer (tokenizer.ggml.tokens, tokenizer.ggml.model)",
        ),
        (
            "tiny-dflash-wide.gguf",
            "has n_embd 32 but target tiny-qwen3.gguf has 64: its width (dflash.embedding_length)",
        ),
        (
            "tiny-dflash-draft-premerge.gguf",
            "is a pre-merge DFlash file (architecture dflash-draft) that llama.cpp cannot load",
        ),
        (
            "tiny-qwen3.gguf",
            "draft-dflash needs a draft with general.architecture 'dflash', but tiny-qwen3.gguf "
            "is 'qwen3'",
        ),
    ],
)
def test_a_draft_for_another_target_is_refused_when_paired_and_nothing_is_queued(
    signed_in, registered, hardware, enqueued, draft, says
):
    body = {"hardware": hardware.slug, "config": SPECULATIVE | {"draft_model": draft}}
    response = signed_in.post("/api/v1/submissions", body, format="json")

    assert response.status_code == 400
    assert says in " ".join(response.json()["config"]["draft_model"])
    assert not Job.objects.exists() and not Config.objects.exists() and not enqueued
