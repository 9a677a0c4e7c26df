"""The three agent roles: Teller, Planner, Worker."""
