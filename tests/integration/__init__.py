"""Integration on the real models shipped by PyPI packages."""
