"""Accounts' settings from the environment: mail through Django's mailers (console unless told),
sign-in providers only where a deployment configures them, and strict rate syntax."""

from __future__ import annotations

import pytest

from tests.support.settings_env import refusal as stops_the_site
from tests.support.settings_env import settings_values

KEYS = (
    "EMAIL_",
    "SPECBOARD_GITHUB_",
    "SPECBOARD_HUGGINGFACE_",
    "SPECBOARD_SIGNUP",
    "SPECBOARD_PASS",
    "SPECBOARD_SIGNIN",
)


def seen(**environment: str) -> tuple[dict, dict, dict]:
    """The mailers, sign-in providers and rate limits a deployment reads from this environment."""
    names = ["MAILERS", "SOCIALACCOUNT_PROVIDERS", "ACCOUNT_RATE_LIMITS"]
    return tuple(settings_values(names, dropping=KEYS, **environment))


def refusal(**environment: str) -> str:
    return stops_the_site(dropping=KEYS, **environment)


def test_mail_goes_to_the_console_by_default_and_through_smtp_when_configured():
    mailers, providers, limits = seen()
    assert mailers == {
        "default": {"BACKEND": "django.core.mail.backends.console.EmailBackend", "OPTIONS": {}}
    }
    assert providers == {}
    assert limits["signup"] == "10/h/ip" and limits["login"] is None
    # Failed sign-ins are throttled per address only (never per account: axes locks an account
    # at one address); the throttle's window is the lockout's.
    assert limits["login_failed"] == "20/15m/ip"
    assert (
        seen(SPECBOARD_SIGNIN_ADDRESS_FAILURES="50", SPECBOARD_SIGNIN_COOLOFF_MINUTES="30")[2][
            "login_failed"
        ]
        == "50/30m/ip"
    )

    smtp, _, _ = seen(
        EMAIL_BACKEND="smtp",
        EMAIL_HOST="mail.example.org",
        EMAIL_PORT="465",
        EMAIL_HOST_USER="specboard",
        EMAIL_HOST_PASSWORD="s3cret",
        EMAIL_USE_TLS="0",
        EMAIL_USE_SSL="1",
    )
    assert smtp["default"] == {
        "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
        "OPTIONS": {
            "host": "mail.example.org",
            "port": 465,
            "username": "specboard",
            "password": "s3cret",
            "use_tls": False,
            "use_ssl": True,
            "timeout": 20,
        },
    }


@pytest.mark.parametrize(
    ("environment", "message"),
    [
        ({"EMAIL_BACKEND": "sendmail"}, "EMAIL_BACKEND must be one of console, smtp, file, locmem"),
        ({"EMAIL_BACKEND": "smtp", "EMAIL_PORT": "25x"}, "EMAIL_PORT must be an integer"),
        ({"EMAIL_BACKEND": "smtp", "EMAIL_USE_SSL": "1"}, "cannot both be on"),
        ({"EMAIL_BACKEND": "file"}, "needs EMAIL_FILE_PATH"),
        ({"SPECBOARD_GITHUB_CLIENT_ID": "abc"}, "SPECBOARD_GITHUB_CLIENT_SECRET go together"),
        ({"SPECBOARD_SIGNUP_RATE": "ten an hour"}, "SPECBOARD_SIGNUP_RATE must be rates like"),
        ({"SPECBOARD_SIGNIN_ADDRESS_FAILURES": "0"}, "must be 1 or more"),
        ({"SPECBOARD_SIGNIN_FAILURES": "five"}, "SPECBOARD_SIGNIN_FAILURES must be an integer"),
    ],
)
def test_malformed_account_settings_stop_the_site_with_one_line(environment, message):
    assert message in refusal(**environment)


def providers_on_the_sign_in_page(client) -> list[str]:
    page = client.get("/accounts/login/").content.decode()
    return [name for name in ("GitHub", "Hugging Face") if f'title="{name}"' in page]


def test_sign_in_providers_appear_only_where_a_deployment_configures_them(db, client, settings):
    _, none, _ = seen()
    settings.SOCIALACCOUNT_PROVIDERS = none
    assert providers_on_the_sign_in_page(client) == []

    _, configured, _ = seen(
        SPECBOARD_GITHUB_CLIENT_ID="gh-id",
        SPECBOARD_GITHUB_CLIENT_SECRET="gh-secret",
        SPECBOARD_HUGGINGFACE_CLIENT_ID="hf-id",
        SPECBOARD_HUGGINGFACE_CLIENT_SECRET="hf-secret",
    )
    assert configured["openid_connect"]["APPS"][0]["settings"]["server_url"] == (
        "https://huggingface.co"
    )
    settings.SOCIALACCOUNT_PROVIDERS = configured
    assert providers_on_the_sign_in_page(client) == ["GitHub", "Hugging Face"]
    # Starting the OAuth dance is a POST (a confirmation page first), never a bare GET.
    start = client.get("/accounts/github/login/?process=login")
    assert start.status_code == 200 and b'method="post"' in start.content

    _, github_only, _ = seen(
        SPECBOARD_GITHUB_CLIENT_ID="gh-id", SPECBOARD_GITHUB_CLIENT_SECRET="gh-secret"
    )
    settings.SOCIALACCOUNT_PROVIDERS = github_only
    assert providers_on_the_sign_in_page(client) == ["GitHub"]
