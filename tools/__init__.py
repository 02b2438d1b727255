"""Tools for people running the workflow, called by no rule (the rules' steps live in workflow_scripts/):

- ``plan``: the planning report of a dry run (jobs, GPU-hours, resource problems) for a profile;
- ``slurm_profile``: write the site profile ``slurm`` that ``snakemake --profile slurm`` finds;
- ``gpu_estimate``: GPU memory and time of each training procedure at 7-9B scale (``--plan``: the grid's LAPT jobs),
  the command line of ``workflow_scripts.gpu``;
- ``gpu_bench``: the check for a lent GPU (memory per term and step time of each LAPT job kind), and
  ``gpu_corrections``: what its JSON says to change in ``workflow_scripts.gpu.estimate``;
- ``init_quality``: held-out bits per character of every initialization with no training (the methods' sanity check).
"""
