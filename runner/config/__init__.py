"""The experiment file: YAML with line numbers, validation, the :class:`Experiment` it describes."""
