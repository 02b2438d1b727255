"""GPU memory and time of a LAPT run, estimated from the model's shape (arithmetic, not a measurement; docs/gpu.md).

- ``shape``: ``ModelShape`` (the config.json numbers the training estimate and the speed plan need), the paper
  grid's models and size classes, and the shape of any transformers config;
- ``estimate``: the memory terms and step time of one run per procedure's stages (``estimate``), and the largest
  micro-batch that fits (``fitting_micro_batch``, which lapt's ``micro_batch: auto`` takes on the device);
- ``fit``: a job at the micro-batch lapt will take (``planned``), on the fewest GPUs of a node that hold it
  (``planned_gpus``), and the config key to change where none does (``fit_problem``).

It imports nothing of the workflow's steps but the procedures' stage table (workflow_scripts/procedure_stages.py): lapt
imports it. The grid's LAPT jobs are checked against the profiles' GPU classes by
``workflow_scripts.plan.checks.gpu_fit``; ``python -m tools.gpu_estimate`` prints the estimates.
"""
