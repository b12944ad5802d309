"""The sign-up form (allauth's, answering a taken user name as it answers a taken address), the
sign-in form (allauth's, with one rule for accounts an admin made), the password change and reset
forms (allauth's, offering to revoke the account's API tokens) and the token form."""

from __future__ import annotations

from allauth.account.adapter import get_adapter
from allauth.account.app_settings import EmailVerificationMethod
from allauth.account.forms import ChangePasswordForm, LoginForm, ResetPasswordKeyForm, SignupForm
from allauth.account.models import EmailAddress
from allauth.core import context
from django import forms
from django.contrib import messages
from django.contrib.auth.models import User
from django.core import validators
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse

from leaderboard.accounts import selectors, services
from leaderboard.accounts.services import MAX_NAME_LENGTH

# The longest address Django's EmailField takes (a username is at most 150).
MAX_LOGIN_LENGTH = 254


class SignUpForm(SignupForm):
    """allauth's sign-up, which told a taken user name apart on the page ("A user with that
    username already exists."): anyone could list the accounts, then lock them out. A taken
    name now gets the page a new account gets (the confirmation was sent), and the mail goes to
    the address given, which alone learns that the name is taken; no account is made. A taken
    address is allauth's own case (ACCOUNT_PREVENT_ENUMERATION), answered the same way."""

    username_taken = False

    def clean_username(self) -> str:
        try:
            return super().clean_username()
        except ValidationError as error:
            if error.code != "username_taken":
                raise
            self.username_taken = True
            return self.cleaned_data["username"]

    def try_save(self, request: HttpRequest) -> tuple[object, HttpResponse | None]:
        if not self.username_taken or self.account_already_exists:
            return super().try_save(request)
        email = self.cleaned_data["email"]
        adapter = get_adapter()
        adapter.send_mail(
            "account/email/username_taken",
            email,
            {
                "username": self.cleaned_data["username"],
                "signup_url": request.build_absolute_uri(reverse("account_signup")),
            },
        )
        # What a new account's sign-up shows (allauth's verification-sent message and page).
        adapter.add_message(
            request,
            messages.INFO,
            "account/messages/email_confirmation_sent.txt",
            {"email": email, "login": False, "signup": True},
        )
        return None, redirect("account_email_verification_sent")


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


class _OffersToRevokeTokens:
    """A password form that offers a choice about the account's live API tokens, which
    otherwise keep their access through a new password. The choice shows only when the account
    has live tokens."""

    # The account whose password changes (allauth's password forms keep it), and its live tokens.
    user: User | None
    live_tokens: int

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.live_tokens = (
            selectors.user_tokens(user=self.user).filter(revoked_at=None).count()
            if self.user is not None
            else 0
        )
        if self.live_tokens:
            name, label = self.token_choice(self.live_tokens)
            self.fields[name] = forms.BooleanField(
                required=False,
                label=label,
                help_text="Clients and scripts using a revoked token stop working; make new "
                "ones on your account page.",
            )

    def token_choice(self, live: int) -> tuple[str, str]:
        raise NotImplementedError

    def revokes_tokens(self) -> bool:
        raise NotImplementedError

    def revoke_tokens_if_asked(self) -> None:
        """After the new password is saved: revoke the live tokens if the owner chose to."""
        if self.user is not None and self.live_tokens and self.revokes_tokens():
            count = services.revoke_user_api_tokens(user=self.user)
            messages.info(context.request, f"{count} API token(s) revoked.")


def _tokens(live: int) -> str:
    return f"{live} API token{'s' if live > 1 else ''}"


class PasswordChangeForm(_OffersToRevokeTokens, ChangePasswordForm):
    """allauth's password change, offering to revoke the API tokens (unticked: the owner may
    only be rotating the password)."""

    def token_choice(self, live: int) -> tuple[str, str]:
        return "revoke_api_tokens", f"Also revoke my {_tokens(live)}"

    def revokes_tokens(self) -> bool:
        return bool(self.cleaned_data.get("revoke_api_tokens"))

    def save(self) -> None:
        super().save()
        self.revoke_tokens_if_asked()


class PasswordResetForm(_OffersToRevokeTokens, ResetPasswordKeyForm):
    """allauth's new password from a reset link: the API tokens are revoked unless the owner
    ticks to keep them (a reset often means someone else may have had the account, and a
    client that sends only the passwords gets the safe default)."""

    def token_choice(self, live: int) -> tuple[str, str]:
        return "keep_api_tokens", f"Keep my {_tokens(live)} working (else they are revoked)"

    def revokes_tokens(self) -> bool:
        return not self.cleaned_data.get("keep_api_tokens")

    def save(self) -> None:
        super().save()
        self.revoke_tokens_if_asked()
        # The link proved the owner: failed sign-ins a stranger made no longer lock them out.
        if self.user is not None:
            services.clear_sign_in_lockout(user=self.user)


class TokenCreateForm(forms.Form):
    name = forms.CharField(
        max_length=MAX_NAME_LENGTH,
        help_text="What will use it, e.g. “laptop client” or “CI”.",
        widget=forms.TextInput(attrs={"autocomplete": "off"}),
    )
