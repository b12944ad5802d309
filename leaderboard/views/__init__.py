"""The site's pages, one module per family, as `leaderboard.api.views` holds one per resource.

- `board`: the front page: the leaderboard's filters, rankings, kept-off rows, baselines and
  speedup chart.
- `configs`: a config's page, a run's page and the run's per-request downloads (CSV, JSON).
- `answers`: the pages that answer a question: n_max, context depth, compare, the best config
  for a GPU, and the hardware and model lists and pages.
- `protocols`: the concurrency and categories protocols' pages.
- `jobs`: a job's page, cancelling it, and a user's jobs.
- `submit`: the submit form and its live estimate.
- `hosts`: the GPU hosts serving each hardware kind, and each kind's queue.
- `model_requests`: asking for a Hugging Face model and the answers.

Small function views: each parses its request, reads through `leaderboard.selectors`, writes
through `leaderboard.services` and renders. The account pages are the `leaderboard.accounts`
app's; `leaderboard.urls` routes every page.
"""
