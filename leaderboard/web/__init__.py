"""The web plumbing under the pages: the one whole-response cache (`page_cache`) and the ranking
versions it is keyed by (`board_version`), gunicorn's settings (`gunicorn_conf`), the request body
limit (`body_limit`), the client's address behind proxies (`client_address`) and numbers read from
a query string (`query`).
"""
