"""State, plugins, profiles, scheduling loop and CLI."""
