"""Small private helpers shared by every layer: console output, output folders, machine description."""
