"""Build of sluice's compiled core (the metadata lives in pyproject.toml).

The row decoder ``sluice.binlog._rowcore`` is compiled from Cython source on every install; there is
no prebuilt binary. Set ``SLUICE_NO_EXTENSIONS=1`` at run time to use the pure-Python twin.
"""

from glob import glob

from Cython.Build import cythonize
from setuptools import Extension, setup

EXTENSIONS = [
    Extension("sluice.binlog._rowcore", ["src/sluice/binlog/_rowcore.pyx"], extra_compile_args=["-O2"],
              depends=sorted(glob("src/sluice/binlog/_*.pxi"))),
]

setup(ext_modules=cythonize(EXTENSIONS, language_level=3, compiler_directives={"embedsignature": True}))
