"""The one C extension: the produce path's per-record walk (wire/records/_walk.c).

Optional: where it cannot be compiled, wire uses the same walk in Python.
Everything else about the package is in pyproject.toml.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[Extension("wire.records._walk", ["wire/records/_walk.c"], optional=True)],
)
