"""The files around the code: requirements, launch scripts, containers and configs (NRN6xx)."""
