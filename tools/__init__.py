"""Tools for people running the workflow, called by no rule: the Slurm planning report and the Slurm profile writer."""
