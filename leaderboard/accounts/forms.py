"""The sign-in form (allauth's, with one rule for accounts an admin made) and the token form."""

from __future__ import annotations

from allauth.account.app_settings import EmailVerificationMethod
from allauth.account.forms import LoginForm
from allauth.account.models import EmailAddress
from django import forms
from django.core import validators

from leaderboard.accounts.services import MAX_NAME_LENGTH

# The longest address Django's EmailField takes (a username is at most 150).
MAX_LOGIN_LENGTH = 254


class SignInForm(LoginForm):
    """allauth's sign-in: an address given at sign-up must be confirmed before the account signs
    in. Accounts an admin or a command made (the demo user, a CI bot) were given no address at
    sign-up, the one allauth records as primary: there is nothing to confirm, and they sign in
    as they always have, even once an address was added later or copied from their `email`
    field (allauth's reset links did that for anyone who asked for one, before this site's own
    token generator, leaderboard.accounts.password_reset).

    The name or address is at most MAX_LOGIN_LENGTH characters: a longer one is no account's,
    and axes would store it in a 255-character column, which PostgreSQL refuses to overflow."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        login = self.fields["login"]
        login.max_length = MAX_LOGIN_LENGTH
        login.validators.append(validators.MaxLengthValidator(MAX_LOGIN_LENGTH))
        login.widget.attrs["maxlength"] = str(MAX_LOGIN_LENGTH)

    def login(self, request, redirect_url=None):
        if (
            self.user is not None
            and not EmailAddress.objects.filter(user=self.user, primary=True).exists()
        ):
            self._login.email_verification = EmailVerificationMethod.NONE
        return super().login(request, redirect_url)


class TokenCreateForm(forms.Form):
    name = forms.CharField(
        max_length=MAX_NAME_LENGTH,
        help_text="What will use it, e.g. “laptop client” or “CI”.",
        widget=forms.TextInput(attrs={"autocomplete": "off"}),
    )
