"""The terminal side of the ``mimikit`` command: what each command that talks to an instance
prints (status and doctor, send and answer, tasks, prompts), and how ``mimikit worker`` and
``mimikit beat`` start Celery's commands (``processes``)."""
