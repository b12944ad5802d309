"""Specboard's REST API (Django REST framework), mounted at /api/v1/."""
