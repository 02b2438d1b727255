"""One module per initialization method; importing this package registers them all in ``INIT_METHODS``.

To add a method, add a module here whose function is decorated with ``@register_method("Name")`` (with
``needs_corpus=True`` if it reads the corpus D) and import it below. The decorator is the only list of methods.
"""

from workflow_scripts.initialize.methods import align, eeve, focus, merge, random_mean

__all__ = ["align", "eeve", "focus", "merge", "random_mean"]
