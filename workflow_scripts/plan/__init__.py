"""Planning: what a configuration asks for, checked and expanded once before any job runs.

``build.check_plan`` (the one entry point rules/common.smk calls) runs the checks of ``checks/`` and returns the
``Plan``: the config's ``grid.Grid`` (methods, cells), the models' shapes (``models``), the run folder (``runs``) and
where each output lies (``paths.Layout``). ``resources`` gives each job's cost, ``steps`` the evaluation steps of a
cell (files and arguments, from the task registry) and ``speed`` the speed step's memory and time limits.

Arrows point one way: the steps (every other package of workflow_scripts/) may import the plan, and the plan imports
only the registries' specs and the cheap readers of the steps it checks (no torch). tests/test_structure.py checks
that no import cycle forms.
"""
