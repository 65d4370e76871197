"""The package version, read by pyproject.toml (``[tool.setuptools.dynamic]``) too."""

__version__ = "0.4.0"
