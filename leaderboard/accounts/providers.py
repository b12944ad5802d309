"""The sign-in providers a deployment configures from its environment (settings reads them once).

SPECBOARD_GITHUB_CLIENT_ID / _CLIENT_SECRET and SPECBOARD_HUGGINGFACE_CLIENT_ID / _CLIENT_SECRET;
a provider without both is not offered. This module imports no models: settings import it.
"""

from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured


def oauth_app(provider: str) -> dict | None:
    """SPECBOARD_<PROVIDER>_CLIENT_ID and _CLIENT_SECRET as an allauth app, None when unset."""
    client_id = os.environ.get(f"SPECBOARD_{provider}_CLIENT_ID")
    secret = os.environ.get(f"SPECBOARD_{provider}_CLIENT_SECRET")
    if bool(client_id) != bool(secret):
        raise ImproperlyConfigured(
            f"SPECBOARD_{provider}_CLIENT_ID and SPECBOARD_{provider}_CLIENT_SECRET go together"
        )
    return {"client_id": client_id, "secret": secret, "key": ""} if client_id else None


def social_providers() -> dict:
    """The sign-in providers this deployment configured: GitHub (OAuth) and Hugging Face (OpenID
    Connect at huggingface.co); none unless their client id and secret are set."""
    providers: dict = {}
    if github := oauth_app("GITHUB"):
        providers["github"] = {"APPS": [github], "SCOPE": ["read:user", "user:email"]}
    if hugging_face := oauth_app("HUGGINGFACE"):
        hugging_face |= {
            "provider_id": "huggingface",
            "name": "Hugging Face",
            "settings": {
                "server_url": "https://huggingface.co",
                "scope": ["openid", "profile", "email"],
            },
        }
        providers["openid_connect"] = {"APPS": [hugging_face]}
    return providers
