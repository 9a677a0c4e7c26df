"""Tasks as users and agents handle them: submit (with de-duplication), list, cancel.

A *task* here is the stored record of SPEC section 4; the Celery task bodies that run them are
in ``mimikit.celery_tasks``, and one delivery of a task is ``mimikit.delivery.execution``.
"""
