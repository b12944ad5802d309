"""The config and run pages' evidence: what every number means (`definitions`), chart data
(`charts`), the per-protocol figures (`protocols`, `categories`, `output_length`, `quality`),
energy and roofline (`energy`), the spread over requests (`spread`), provenance (`provenance`), a
run's noise and speedup (`outcomes`) and the catalogue of configs, runs, models and hardware
(`catalogue`).
"""
