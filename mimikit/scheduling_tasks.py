"""Celery tasks of the scheduler (trigger firing, llm_eval batches)."""
