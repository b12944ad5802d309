"""Messaging between the site and its workers: the Celery app and its queues (`celery`), the one
sender of tasks (`dispatch`), the broker's users and what the site asks it (`broker`), the app's
Redis transport that refuses foreign messages (`transport`), the signed envelope of a GPU host's
messages (`signing`), the worker command lines (`workers`) and a host's progress event
(`progress`).
"""
