"""Accounts: sign-up and sign-in through django-allauth (adapter; forms: sign-in and the password
forms that offer to revoke API tokens; backends: one password hash per sign-in attempt;
password_reset: reset links that write nothing), the account page (views), and hashed API
tokens (models, services, selectors, authentication, admin)."""
