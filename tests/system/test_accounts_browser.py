"""A newcomer's way in, in Debian's Chromium: sign up, confirm the address from the email, sign
in, make an API token on /account/, submit a config through the API with it, and find the job
on My jobs. Mail goes to Django's in-memory outbox, which the live server shares with the test."""

from __future__ import annotations

import re

import httpx
import pytest
from django.core import mail

from leaderboard.models import Job
from tests.system import test_browser

pytestmark = [pytest.mark.browser]

# The browser fixtures of the site's other browser tests (Chromium, a page that fails on errors).
browser, page = test_browser.browser, test_browser.page
PASSWORD = "a-long-enough-passphrase"
CONFIG = {"target_model": "tiny-qwen3.gguf", "protocol": {"name": "quick", "n_predict": 16}}


def test_sign_up_confirm_make_a_token_and_submit_through_the_api(
    live_server, page, models, hardware, enqueued, django_user_model
):
    page.goto(live_server.url + "/")
    page.get_by_role("link", name="Sign up").click()
    page.wait_for_url(re.compile(r"/accounts/signup/$"))
    page.fill("#id_email", "hedy@example.org")
    page.fill("#id_username", "hedy")
    page.fill("#id_password1", PASSWORD)
    page.fill("#id_password2", PASSWORD)
    test_browser.shoot(page, "sign-up")
    page.get_by_role("button", name="Sign Up").click()
    page.wait_for_url(re.compile(r"/accounts/confirm-email/$"))
    assert "Verify Your Email Address" in page.content()

    [message] = mail.outbox
    assert message.to == ["hedy@example.org"]
    link = re.search(r"https?://\S+/accounts/confirm-email/\S+/", message.body).group(0)
    page.goto(link)
    page.get_by_role("button", name="Confirm").click()
    page.wait_for_url(re.compile(r"/accounts/login/"))

    page.fill("#id_login", "hedy@example.org")
    page.fill("#id_password", PASSWORD)
    test_browser.shoot(page, "sign-in")
    page.get_by_role("button", name="Sign In").click()
    page.wait_for_url(re.compile(r"/$"))
    page.get_by_role("navigation").get_by_role("link", name="Account").click()
    page.wait_for_url(re.compile(r"/account/$"))

    page.fill("#id_name", "browser test")
    page.get_by_role("button", name="Create token").click()
    page.wait_for_url(re.compile(r"/account/$"))
    key = page.locator("#new-token-key").inner_text()
    assert key.startswith("sbk_")
    test_browser.shoot(page, "account-new-token")
    # The key was in the answer to the POST only: the page itself never shows it again.
    page.goto(live_server.url + "/account/")
    assert page.locator("#new-token-key").count() == 0
    assert key not in page.content()

    response = httpx.post(
        f"{live_server.url}/api/v1/submissions",
        json={"hardware": hardware.slug, "config": CONFIG},
        headers={"Authorization": f"Token {key}"},
        timeout=30,
    )
    assert response.status_code == 201, response.text
    job = Job.objects.get(pk=response.json()["id"])
    assert job.owner == django_user_model.objects.get(username="hedy")
    assert len(enqueued) == 1

    page.get_by_role("navigation").get_by_role("link", name="My jobs").click()
    page.wait_for_url(re.compile(r"/jobs/$"))
    assert page.locator("#my-jobs").get_by_role("link", name=str(job.pk)).is_visible()
    page.goto(live_server.url + "/account/")
    assert page.locator("#recent-jobs").get_by_role("link", name=f"Job {job.pk}").is_visible()
    assert "never" not in page.locator("#tokens tbody tr").first.inner_text()
    test_browser.shoot(page, "account")
