"""Speed (workflow_scripts/speed): the cell's decoding timed against Source's in the same job, with its token bound."""

from workflow_scripts.tasks import TaskSpec, register

SPEC = register(
    TaskSpec(
        name="speed",
        order=30,
        rule="measure_speed",
        # the time limit of a model that needs a GPU follows its planned workload (workflow_scripts/speed/plan.py,
        # rule measure_speed's speed_runtime: 144-189 min for configs/paper.yaml); this one serves the smaller models
        cost=((7000, 28), (6000, 13), (2000, 15)),
        rule_words="speed",
        words=None,
        card_type="text-generation",
        mumo=True,
        cell_files=("speed.json",),
        cell_order=4,
    )
)
