"""Tools from MCP servers the person configures: the config file (``config``), the environment a
server runs with (``environment``), one live session with a server (``connection``), the
servers of one Worker run (``run``), their tools as the Worker's (``tools``), what the Planner
sees of them (``planning``, with descriptions learned in ``catalog``), and the check of each
(``checks``)."""
