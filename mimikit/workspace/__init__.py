"""Where Workers act: the work directory's file and shell actions for the ``llm`` backend
(``local``), the sandbox its shell commands run in (``sandbox``, one module per kind:
``bwrap``, ``landlock`` with its ``grants`` and ``mountns``, ``seatbelt``), the ``codex``
backend, and the process groups that let a timeout or a cancel kill a command with everything
it started (``procgroup``)."""
