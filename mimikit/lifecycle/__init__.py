"""The task lifecycle: one delivery of a task, and what happens when a task ends.

A run ends with one typed event (``event.Completion``: the task, its result or its cancel, and
what the delivery produced) passed through the ordered steps of ``pipeline``: commit the staged
children, record the outcome, route it to the dependents and retire the spent ones, tell the
person, write memory, pause a trigger over its budget. Each step is one module; the order is
declared once in ``pipeline.STEPS``.
"""
