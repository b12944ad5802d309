"""Accounts: sign-up through django-allauth, the account page, and hashed API tokens."""
