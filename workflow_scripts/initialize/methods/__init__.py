"""One module per initialization method; importing this package registers them all in ``INIT_METHODS``.

To add a method, add a module here whose function is decorated with ``@register_method("Name")`` (with
``needs_corpus=True`` if it reads the corpus D) and import it below. The decorator is the only list of methods.
"""

# Imported one by one in the paper's order (Random, Mean, Merge, Align, FOCUS, EEVE): registration order is the order
# of INIT_METHODS, which tables and reports list methods in. Mean-ref (the reference code's Mean, an ablation) is
# registered in random_mean right after Mean.
from workflow_scripts.initialize.methods import random_mean  # isort: skip
from workflow_scripts.initialize.methods import merge  # isort: skip
from workflow_scripts.initialize.methods import align  # isort: skip
from workflow_scripts.initialize.methods import focus  # isort: skip
from workflow_scripts.initialize.methods import eeve  # isort: skip

__all__ = ["align", "eeve", "focus", "merge", "random_mean"]
