"""Built-in plugins, one module each."""
