"""Submitting and following work: a job's status (`status`), its place in the queue (`queue`), the
GPU hosts (`hosts`), the submit form's estimates (`estimates`) and model requests
(`model_requests`).
"""
