"""Tools for people running the workflow, called by no rule (the rules' steps live in workflow_scripts/):

- ``plan``: the planning report of a dry run (jobs, GPU-hours, resource problems) for a profile;
- ``slurm_profile``: write the site profile ``slurm`` that ``snakemake --profile slurm`` finds;
- ``gpu_estimate``: GPU memory and time of each training procedure at 7-9B scale;
- ``init_quality``: held-out bits per character of every initialization with no training (the methods' sanity check).
"""
