"""The admin site (leaderboard.admin): its actions go through the services, and a change form
cannot set what only a service may change."""

from __future__ import annotations

from leaderboard import services
from leaderboard.models import ModelFile
from tests.support.gguf_files import write_gguf


def test_an_admin_marks_a_model_as_test_weights_and_reading_it_again_keeps_the_mark(
    client, django_user_model, settings, tmp_path, db
):
    settings.SPECBOARD_MODELS_DIR = tmp_path
    model = services.register_model(path=write_gguf(tmp_path / "real.gguf", tokenizer="gpt2").name)
    admin = django_user_model.objects.create_superuser(username="root", password="pw-for-tests")
    client.force_login(admin)

    page = client.post(
        "/admin/leaderboard/modelfile/",
        {"action": "mark_test_weights", "_selected_action": [model.pk]},
        follow=True,
    )

    assert "Marked as test weights: real." in page.content.decode()
    assert ModelFile.objects.get(pk=model.pk).test_weights is True
    assert services.register_model(path="real.gguf").test_weights is True
    # The change form cannot set the mark past the service that moves the rows.
    form = client.get(f"/admin/leaderboard/modelfile/{model.pk}/change/").content.decode()
    assert 'name="test_weights"' not in form
