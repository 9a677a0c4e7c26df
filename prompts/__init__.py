"""Prompt files of the agents (markdown), installed with the package."""
