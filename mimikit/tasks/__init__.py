"""Tasks as users and agents handle them: submit (with de-duplication), list, edit, pause.

A *task* here is the stored record of SPEC section 4; the Celery task bodies that run them are
in ``mimikit.celery_tasks``; one delivery of a task, its cancel and what happens when it ends
are ``mimikit.lifecycle``.
"""
