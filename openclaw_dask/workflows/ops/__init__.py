"""Built-in ops (importing a module registers its ops)."""
