"""The paper's tables and figures regenerated from results/<run>/tables/results.csv (paper 002 Tables 1-11, 14;
Figures 2-5).

`specs` declares each table, `cells` fills it (mean ± sd over runs, best / second best, better than Source) and trims
it to what the results fill, `render` writes Markdown, LaTeX, CSV and HTML, `figures` the figures and loss curves,
`costs` the cost of every grid cell, `names` the plain names they show; `tables.md` lists what the configuration did
not run. `python -m workflow_scripts.paper --results results/default/tables/results.csv
--out results/default/paper` needs only the CSV; the other inputs (fragmentation, expansion reports, loss curves,
benchmarks) are read from the run folder around it when present.
"""
