"""The answer pages (the model page's draft advice, /best/, /nmax/, /concurrency/, /compare/):
which draft for a target (`drafts`), the rows those answers are decided from (`draft_rows`),
serving figures by concurrency level (`serving`) and configs side by side (`compare`).
"""
