"""Pure core: standard library and numpy only, no I/O, no heavy imports."""
