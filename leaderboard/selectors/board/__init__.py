"""The front page and /hardware/: the leaderboard's rows, filters and vocabulary (`rows`), each
row's rank as the verdicts decided it (`ranks`), the speedup and GPU charts (`charts`) and the
answer at a glance (`glance`).
"""
