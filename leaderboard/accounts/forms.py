"""The sign-in form (allauth's, with one rule for accounts an admin made) and the token form."""

from __future__ import annotations

from allauth.account.app_settings import EmailVerificationMethod
from allauth.account.forms import LoginForm
from allauth.account.models import EmailAddress
from django import forms

from leaderboard.accounts.services import MAX_NAME_LENGTH


class SignInForm(LoginForm):
    """allauth's sign-in: an address given at sign-up must be confirmed before the account signs
    in. Accounts an admin or a command made have no address on record (the demo user, a CI bot):
    there is nothing to confirm, and they sign in as they always have."""

    def login(self, request, redirect_url=None):
        if self.user is not None and not EmailAddress.objects.filter(user=self.user).exists():
            self._login.email_verification = EmailVerificationMethod.NONE
        return super().login(request, redirect_url)


class TokenCreateForm(forms.Form):
    name = forms.CharField(
        max_length=MAX_NAME_LENGTH,
        help_text="What will use it, e.g. “laptop client” or “CI”.",
        widget=forms.TextInput(attrs={"autocomplete": "off"}),
    )
