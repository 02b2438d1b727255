"""The findings page of a run (rule findings, results/<run>/findings/): quality against speed, the learning curves,
the trade-off of the number of new tokens, a table per language and a paragraph generated from the numbers.

`numbers` reads results.csv and each cell's learning curve into one panel per model and language (relative bits per
character, paired speed-up and bound, where a curve reaches Source's level, the power-law extrapolation), `text` the
tables and captions, `paragraph` the findings paragraph, `plots` the figures; `python -m workflow_scripts.findings
--results results/<run>/tables/results.csv --out results/<run>/findings` writes the page. docs/findings.md explains
each part.
"""
