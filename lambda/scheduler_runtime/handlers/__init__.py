"""Lambda entry points, one module per function: ``scheduler_runtime.handlers.<name>.handler``."""
